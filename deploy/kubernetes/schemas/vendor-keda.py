#!/usr/bin/env python3
"""Writes the JSON Schemas of KEDA's ScaledObject, ScaledJob and TriggerAuthentication (keda-2.20/) from
KEDA's CustomResourceDefinitions (config/crd/bases in KEDA's repository), for script/k8s-check:

    deploy/kubernetes/schemas/vendor-keda.py KEDA_CHECKOUT/config/crd/bases

Each schema is the CRD's openAPIV3Schema with every object that lists its properties closed to others
(additionalProperties: false, as the API server's strict field validation refuses unknown fields), except
where the CRD keeps unknown fields. ScaledJob's jobTargetRef is a batch/v1 JobSpec, which script/k8s-check
validates with Kubernetes' own schema: here it is left an object, which keeps the file small."""
import json
import pathlib
import sys

import yaml

KINDS = {"keda.sh_scaledobjects.yaml": "scaledobject.json", "keda.sh_scaledjobs.yaml": "scaledjob.json",
         "keda.sh_triggerauthentications.yaml": "triggerauthentication.json"}


def close(node):
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for value in node.values():
            close(value)
    elif isinstance(node, list):
        for value in node:
            close(value)


def main():
    source = pathlib.Path(sys.argv[1])
    out = pathlib.Path(__file__).parent / "keda-2.20"
    for crd_file, name in KINDS.items():
        crd = yaml.safe_load((source / crd_file).read_text())
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
        schema = version["schema"]["openAPIV3Schema"]
        if crd["spec"]["names"]["kind"] == "ScaledJob":
            ref = schema["properties"]["spec"]["properties"]["jobTargetRef"]
            schema["properties"]["spec"]["properties"]["jobTargetRef"] = {
                "type": "object", "description": "a batch/v1 JobSpec (validated by script/k8s-check as a Job)"}
            del ref
        close(schema)
        schema["properties"]["apiVersion"]["const"] = "keda.sh/v1alpha1"
        schema["properties"]["kind"]["const"] = crd["spec"]["names"]["kind"]
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        (out / name).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
