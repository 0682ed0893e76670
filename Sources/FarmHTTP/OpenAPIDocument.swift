// Written by script/openapi from docs/openapi.json: edit that file and run the script; a test checks the two agree.

/// The face's own description (OpenAPI 3.1), served at `/api/openapi.json`: the bytes of docs/openapi.json.
enum OpenAPIDocument {
    static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "MediaFarm coordinator",
    "version": "1",
    "description": "The HTTP face of `mediafarm coordinator --http HOST:PORT`: health checks, Prometheus metrics, the job API and server-sent events. Every path but /healthz, /readyz and /login requires `Authorization: Bearer TOKEN` (the --token-file's, or the one printed at start on loopback; --no-auth serves loopback without) or the session cookie /login sets. A Host header that is not an IP address, localhost, the listen address or an --allowed-host name is refused with 421 on every path but /healthz. Errors are JSON objects with an `error` message. Request bodies over 1 MiB are refused with 413. A request other than GET whose Origin header names another site is refused with 403. The asset library is served under /api/assets, /api/albums and /api/library: a request whose bearer token is a scoped library token (`mediafarm library token create`) instead of the API's own reaches only those paths and POST /api/jobs, and sees and submits only the assets of its albums.",
    "license": {
      "name": "GPL-2.0-or-later"
    }
  },
  "servers": [
    {
      "url": "http://127.0.0.1:8080"
    }
  ],
  "security": [
    {
      "bearer": []
    }
  ],
  "tags": [
    {
      "name": "jobs",
      "description": "Submit, list, look at, cancel and retry jobs."
    },
    {
      "name": "webhooks",
      "description": "Webhook endpoints and deliveries."
    },
    {
      "name": "events",
      "description": "Server-sent events."
    },
    {
      "name": "farm",
      "description": "Coordinators, pauses and the queue's history."
    },
    {
      "name": "library",
      "description": "Assets, albums, resolution and changes (PhotoKit's fetches)."
    },
    {
      "name": "pictures",
      "description": "Posters, waveforms and storyboards of assets."
    },
    {
      "name": "pages",
      "description": "The console's sign-in and status page (HTML)."
    },
    {
      "name": "health",
      "description": "Liveness, readiness, metrics and this document."
    }
  ],
  "paths": {
    "/healthz": {
      "get": {
        "operationId": "getHealth",
        "tags": [
          "health"
        ],
        "summary": "Liveness: the process answers and its loops are turning.",
        "security": [],
        "responses": {
          "200": {
            "description": "Alive (also while draining).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Health"
                }
              }
            }
          },
          "503": {
            "description": "A loop has not turned for two minutes.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Health"
                }
              }
            }
          }
        }
      }
    },
    "/readyz": {
      "get": {
        "operationId": "getReadiness",
        "tags": [
          "health"
        ],
        "summary": "Readiness: the queue answers and the coordinator is not draining.",
        "security": [],
        "responses": {
          "200": {
            "description": "Ready.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Ready"
                }
              }
            }
          },
          "503": {
            "description": "Draining, or the queue does not answer.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Ready"
                }
              }
            }
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "getMetrics",
        "tags": [
          "health"
        ],
        "summary": "Prometheus metrics, text format 0.0.4.",
        "responses": {
          "200": {
            "description": "Metrics.",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/jobs": {
      "post": {
        "operationId": "submitJob",
        "tags": [
          "jobs"
        ],
        "summary": "Queue a manifest (the body). Relative paths resolve against the coordinator's --api-base-dir; outputs must lie under its output roots. A manifest may name library assets (\"input\": \"asset:ID\"): each must be in the library (else 422); with a scoped token every source must be an asset of its albums (else 403). An input file that is not there is a 422 unless allowMissingInputs is true. The token is checked before the manifest is read.",
        "parameters": [
          {
            "name": "name",
            "in": "query",
            "description": "The job's name when the manifest gives none.",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "priority",
            "in": "query",
            "description": "Higher runs first (at most 0 with a scoped library token).",
            "schema": {
              "type": "integer",
              "minimum": -1000000000,
              "maximum": 1000000000
            }
          },
          {
            "name": "key",
            "in": "query",
            "description": "Unique key: at most one live job holds it. Stored in the API's own namespace (api:KEY; api:TOKEN-NAME:KEY for a scoped token).",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "maxAttempts",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000
            }
          },
          {
            "name": "timeout",
            "in": "query",
            "description": "Seconds one attempt may take.",
            "schema": {
              "type": "number",
              "exclusiveMinimum": 0,
              "maximum": 31536000
            }
          },
          {
            "name": "delay",
            "in": "query",
            "description": "Seconds before the job may start (at most a day with a scoped library token).",
            "schema": {
              "type": "number",
              "minimum": 0,
              "maximum": 315360000
            }
          },
          {
            "name": "allowMissingInputs",
            "in": "query",
            "description": "Queue a manifest whose input files are not there yet (as submit --allow-missing-inputs); without it a missing input is a 422 at its JSON path.",
            "schema": {
              "type": "boolean",
              "default": false
            }
          },
          {
            "name": "Idempotency-Key",
            "in": "header",
            "description": "Names the request so that a retry cannot queue the job twice: the same key answers with the same job (used as key when the query gives none).",
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/Manifest"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "A live job already holds the unique key: its id, nothing queued.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Submitted"
                }
              }
            }
          },
          "201": {
            "description": "Queued.",
            "headers": {
              "Location": {
                "schema": {
                  "type": "string"
                }
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Submitted"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "description": "From another site (Origin), or a scoped token submitting something outside its albums.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "description": "The body is larger than the coordinator's limit (1 MiB); the message names it.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "422": {
            "description": "The manifest is invalid: every issue with its JSON path; nothing was queued. Outputs that are the farm's own files, and \"overwrite\": true unless the coordinator runs with --api-allow-overwrite (never with a scoped token), are refused here. So is a manifest whose \"after\" names a job that is not in the queue (a key there is one given with ?key= or Idempotency-Key).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      },
      "get": {
        "operationId": "listJobs",
        "tags": [
          "jobs"
        ],
        "summary": "Jobs, newest first, a page at a time.",
        "parameters": [
          {
            "name": "state",
            "in": "query",
            "description": "Only jobs in these states (comma-separated).",
            "schema": {
              "type": "string",
              "pattern": "^(waiting|queued|running|succeeded|failed|cancelled|dead)(,(waiting|queued|running|succeeded|failed|cancelled|dead))*$",
              "examples": [
                "queued",
                "failed,dead"
              ]
            }
          },
          {
            "name": "limit",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000,
              "default": 50
            }
          },
          {
            "name": "after",
            "in": "query",
            "description": "The `next` of the previous page.",
            "schema": {
              "type": "integer",
              "minimum": 1
            }
          }
        ],
        "responses": {
          "200": {
            "description": "A page.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobPage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/jobs/{id}": {
      "parameters": [
        {
          "$ref": "#/components/parameters/id"
        }
      ],
      "get": {
        "operationId": "getJob",
        "tags": [
          "jobs"
        ],
        "summary": "One job: state, progress, phase, attempts, errors, result.",
        "responses": {
          "200": {
            "description": "The job.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Job"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/jobs/{id}/cancel": {
      "parameters": [
        {
          "$ref": "#/components/parameters/id"
        }
      ],
      "post": {
        "operationId": "cancelJob",
        "tags": [
          "jobs"
        ],
        "summary": "Cancel a queued or running job (a running worker is stopped, nothing is published).",
        "responses": {
          "200": {
            "description": "The job after the change.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Job"
                }
              }
            }
          },
          "303": {
            "description": "From the status page's form: back to /."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/CrossOrigin"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          }
        }
      }
    },
    "/api/jobs/{id}/retry": {
      "parameters": [
        {
          "$ref": "#/components/parameters/id"
        }
      ],
      "post": {
        "operationId": "retryJob",
        "tags": [
          "jobs"
        ],
        "summary": "Queue a failed, dead or cancelled job again with fresh attempts.",
        "responses": {
          "200": {
            "description": "The job after the change.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Job"
                }
              }
            }
          },
          "303": {
            "description": "From the status page's form: back to /."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/CrossOrigin"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          }
        }
      }
    },
    "/api/jobs/{id}/deliveries": {
      "parameters": [
        {
          "$ref": "#/components/parameters/id"
        }
      ],
      "get": {
        "operationId": "listJobDeliveries",
        "tags": [
          "webhooks"
        ],
        "summary": "The job's webhook deliveries, newest first: each terminal event to each URL, its attempts and last error.",
        "responses": {
          "200": {
            "description": "The deliveries.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Delivery"
                  }
                }
              }
            }
          },
          "404": {
            "description": "No such job.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/webhooks": {
      "get": {
        "operationId": "getWebhooks",
        "tags": [
          "webhooks"
        ],
        "summary": "The farm's webhook endpoints and allowed hosts, its deliveries by state, and the latest failed or refused ones. The same JSON as `webhooks list --json`.",
        "responses": {
          "200": {
            "description": "The webhook settings and figures.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "endpoints",
                    "allowedHosts",
                    "deliveries",
                    "failed"
                  ],
                  "properties": {
                    "endpoints": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": [
                          "url",
                          "addedBy",
                          "addedAt"
                        ],
                        "properties": {
                          "url": {
                            "type": "string"
                          },
                          "events": {
                            "type": "array",
                            "items": {
                              "type": "string"
                            }
                          },
                          "addedBy": {
                            "type": "string"
                          },
                          "addedAt": {
                            "type": "string",
                            "format": "date-time"
                          }
                        }
                      }
                    },
                    "allowedHosts": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": [
                          "host",
                          "addedBy",
                          "addedAt"
                        ],
                        "properties": {
                          "host": {
                            "type": "string"
                          },
                          "addedBy": {
                            "type": "string"
                          },
                          "addedAt": {
                            "type": "string",
                            "format": "date-time"
                          }
                        }
                      }
                    },
                    "deliveries": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "description": "Deliveries by state: pending, delivered, failed, refused."
                    },
                    "oldestPendingAt": {
                      "type": "string",
                      "format": "date-time"
                    },
                    "failed": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Delivery"
                      }
                    }
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/webhooks/retry": {
      "post": {
        "operationId": "retryDeliveries",
        "tags": [
          "webhooks"
        ],
        "summary": "Send again deliveries that failed or were refused (as `webhooks retry`): by id, or every failed one. Each is pending again and due now, same webhook-id, its attempts counted on. The answer lists those sent again as they ended; an id that did not fail, or is no delivery, is not among them.",
        "parameters": [
          {
            "name": "id",
            "in": "query",
            "description": "A delivery id (as GET /api/jobs/{id}/deliveries gives them); repeat for more.",
            "schema": {
              "type": "array",
              "items": {
                "type": "integer",
                "minimum": 1
              }
            },
            "style": "form",
            "explode": true
          },
          {
            "name": "failed",
            "in": "query",
            "description": "true: every failed delivery (not with id).",
            "schema": {
              "type": "boolean",
              "enum": [
                true
              ]
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The deliveries sent again.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Delivery"
                  }
                }
              }
            }
          },
          "400": {
            "description": "Neither id nor failed=true, both, or an id that is not a positive whole number.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or wrong token.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "A read-only or scoped token.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/api/events": {
      "get": {
        "operationId": "streamEvents",
        "tags": [
          "events"
        ],
        "summary": "Server-sent events: started, progress, finished (this coordinator's attempts), submitted, cancelled, retried (through this API), notice. Each has a JSON data line: a CoordinatorEvent, the same JSON `coordinator --json` prints.",
        "responses": {
          "200": {
            "description": "An event stream; a comment line every 15 s keeps it open.",
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                },
                "x-event-data": {
                  "$ref": "#/components/schemas/CoordinatorEvent"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/coordinators": {
      "get": {
        "operationId": "listCoordinators",
        "tags": [
          "farm"
        ],
        "summary": "Every coordinator on the queue with its worker slots: this one as it is now, the others as they last reported (every 5 s; one not heard from for 15 s is silent, and is forgotten after a day).",
        "responses": {
          "200": {
            "description": "The coordinators, by host then name.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "coordinators"
                  ],
                  "additionalProperties": false,
                  "properties": {
                    "coordinators": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Coordinator"
                      }
                    }
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/": {
      "get": {
        "operationId": "getStatusPage",
        "tags": [
          "pages"
        ],
        "summary": "The status page (HTML).",
        "responses": {
          "200": {
            "description": "The page.",
            "content": {
              "text/html": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "303": {
            "description": "With a token configured and none presented by a browser: to /login."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/assets": {
      "get": {
        "operationId": "listAssets",
        "tags": [
          "library"
        ],
        "summary": "Fetch assets (PHFetchOptions): predicates on their facts, a sort and a page; a scoped token sees its albums' only.",
        "parameters": [
          {
            "name": "album",
            "in": "query",
            "description": "A user album, or a smart one: Videos, Audio, Slo-mo, Recently Added, With Codes, Failed Jobs' Inputs.",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "type",
            "in": "query",
            "description": "The media type.",
            "schema": {
              "enum": [
                "video",
                "audio",
                "image"
              ]
            }
          },
          {
            "name": "since",
            "in": "query",
            "description": "On or after this date (YYYY-MM-DD or ISO 8601): the creation date in the file, else when it was added.",
            "schema": {
              "type": "string",
              "pattern": "^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2}))?$",
              "examples": [
                "2026-11-24",
                "2026-11-24T10:00:00Z"
              ]
            }
          },
          {
            "name": "until",
            "in": "query",
            "description": "Before this date.",
            "schema": {
              "type": "string",
              "pattern": "^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2}))?$",
              "examples": [
                "2026-11-24",
                "2026-11-24T10:00:00Z"
              ]
            }
          },
          {
            "name": "minDuration",
            "in": "query",
            "description": "At least this many seconds.",
            "schema": {
              "type": "number",
              "minimum": 0,
              "maximum": 315360000
            }
          },
          {
            "name": "maxDuration",
            "in": "query",
            "description": "At most this many seconds.",
            "schema": {
              "type": "number",
              "minimum": 0,
              "maximum": 315360000
            }
          },
          {
            "name": "codec",
            "in": "query",
            "description": "The first video (else audio) track's codec.",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "hasCodes",
            "in": "query",
            "description": "Only assets in which a scan found codes.",
            "schema": {
              "type": "boolean"
            }
          },
          {
            "name": "slowMotion",
            "in": "query",
            "description": "Only videos of 100 fps or more.",
            "schema": {
              "type": "boolean"
            }
          },
          {
            "name": "sort",
            "in": "query",
            "description": "The order (default date).",
            "schema": {
              "enum": [
                "date",
                "duration",
                "added"
              ]
            }
          },
          {
            "name": "reverse",
            "in": "query",
            "description": "Newest or longest first.",
            "schema": {
              "type": "boolean"
            }
          },
          {
            "name": "limit",
            "in": "query",
            "description": "A page's size (default 100).",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000
            }
          },
          {
            "name": "after",
            "in": "query",
            "description": "The nextCursor of the page before (base64url), from a listing with the same sort.",
            "schema": {
              "type": "string",
              "pattern": "^[A-Za-z0-9_-]+$",
              "examples": [
                "ZGF0ZXwxNzY0MDAwMDAwLjB8MDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMGc"
              ],
              "x-semantic": "a nextCursor of a listing with the same sort"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "A page of assets.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/AssetPage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "403": {
            "description": "A scoped token asked for an album it has no access to.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "No such album.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/assets/{id}": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]$",
            "examples": [
              "0000000000000000000000000g",
              "asset:zveag3axeyfnzaxzy820mb3yqw"
            ]
          },
          "description": "An asset id: 26 characters of Crockford base32 (any case), the last one of 0 4 8 c g m r w (its two low bits are zero padding: an id is 128 bits); \"asset:\" may lead."
        }
      ],
      "get": {
        "operationId": "getAsset",
        "tags": [
          "library"
        ],
        "summary": "One asset: facts, local identifiers per host, albums, representations made from it and what it was made from.",
        "responses": {
          "200": {
            "description": "The asset.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/AssetDetail"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "404": {
            "description": "No such asset (or not visible to the token).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/library/resolve": {
      "get": {
        "operationId": "resolveAssets",
        "tags": [
          "library"
        ],
        "summary": "This coordinator's host's path for each id (PHCloudIdentifierMapping), or why not.",
        "parameters": [
          {
            "name": "ids",
            "in": "query",
            "description": "1 to 1000 asset ids, comma-separated, no spaces.",
            "schema": {
              "type": "string",
              "pattern": "^(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw](,(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]){0,999}$",
              "examples": [
                "0000000000000000000000000g,zveag3axeyfnzaxzy820mb3yqw"
              ]
            }
          }
        ],
        "responses": {
          "200": {
            "description": "One resolution per id, in order.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Resolution"
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/albums": {
      "get": {
        "operationId": "listAlbums",
        "tags": [
          "library"
        ],
        "summary": "User albums (those of a scoped token) with their sizes, then the smart albums.",
        "responses": {
          "200": {
            "description": "The albums.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Album"
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/library/changes": {
      "get": {
        "operationId": "getLibraryChanges",
        "tags": [
          "library"
        ],
        "summary": "What changed since a change token (PHPersistentChangeToken); the answer's token is the next one to give.",
        "parameters": [
          {
            "name": "since",
            "in": "query",
            "description": "A change token this library gave (LIBRARY.SEQUENCE); the first call omits it.",
            "schema": {
              "type": "string",
              "pattern": "^[A-Za-z0-9-]+\\.[0-9]+$",
              "examples": [
                "lib-0000.0"
              ],
              "x-semantic": "a token this library answered"
            }
          },
          {
            "name": "limit",
            "in": "query",
            "description": "At most this many changes (default 1000).",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 10000
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The changes, oldest first.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ChangeList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/login": {
      "get": {
        "operationId": "getSignInForm",
        "tags": [
          "pages"
        ],
        "summary": "The sign-in form for browsers (HTML): a token for a session cookie.",
        "security": [],
        "responses": {
          "200": {
            "description": "The form.",
            "content": {
              "text/html": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      },
      "post": {
        "operationId": "signIn",
        "tags": [
          "pages"
        ],
        "summary": "Signs a browser in: the form's token, if right, for an HttpOnly, SameSite=Strict session cookie (never the token itself); then to the status page.",
        "security": [],
        "requestBody": {
          "required": true,
          "content": {
            "application/x-www-form-urlencoded": {
              "schema": {
                "type": "object",
                "properties": {
                  "token": {
                    "type": "string"
                  }
                },
                "required": [
                  "token"
                ]
              }
            }
          }
        },
        "responses": {
          "303": {
            "description": "Signed in (Set-Cookie), or no token is configured: to /.",
            "headers": {
              "Set-Cookie": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "401": {
            "description": "A wrong token: the form again.",
            "content": {
              "text/html": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "403": {
            "description": "A cross-origin form post.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          }
        }
      }
    },
    "/api/assets/{id}/poster": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]$",
            "examples": [
              "0000000000000000000000000g",
              "asset:zveag3axeyfnzaxzy820mb3yqw"
            ]
          },
          "description": "An asset id: 26 characters of Crockford base32 (any case), the last one of 0 4 8 c g m r w (its two low bits are zero padding: an id is 128 bits); \"asset:\" may lead."
        },
        {
          "name": "v",
          "in": "query",
          "required": false,
          "schema": {
            "type": "string"
          },
          "description": "The picture's content id (its ETag): the answer is then cached as immutable (Cache-Control: private, max-age=31536000, immutable); a content id that is no longer current answers 404. Without it: Cache-Control: private, no-cache (revalidated by ETag)."
        }
      ],
      "get": {
        "operationId": "getAssetPoster",
        "tags": [
          "pictures"
        ],
        "summary": "The asset's newest poster on this host (made by a job with a \"poster\" section, registered as a representation of kind poster).",
        "responses": {
          "200": {
            "description": "The picture.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                },
                "description": "The content id of the picture (for sheets, of the storyboard's WebVTT file and the sheet's name)."
              }
            },
            "content": {
              "image/jpeg": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              },
              "image/png": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              },
              "image/webp": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          },
          "404": {
            "description": "No such asset (or not visible to the token), no such picture of it on this host, or a ?v= that is not the current picture's content id.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "304": {
            "description": "If-None-Match named the current picture's content id: nothing sent."
          }
        }
      }
    },
    "/api/assets/{id}/waveform": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]$",
            "examples": [
              "0000000000000000000000000g",
              "asset:zveag3axeyfnzaxzy820mb3yqw"
            ]
          },
          "description": "An asset id: 26 characters of Crockford base32 (any case), the last one of 0 4 8 c g m r w (its two low bits are zero padding: an id is 128 bits); \"asset:\" may lead."
        },
        {
          "name": "v",
          "in": "query",
          "required": false,
          "schema": {
            "type": "string"
          },
          "description": "The picture's content id (its ETag): the answer is then cached as immutable (Cache-Control: private, max-age=31536000, immutable); a content id that is no longer current answers 404. Without it: Cache-Control: private, no-cache (revalidated by ETag)."
        }
      ],
      "get": {
        "operationId": "getAssetWaveform",
        "tags": [
          "pictures"
        ],
        "summary": "The asset's newest waveform on this host (a PNG made by a job with a \"waveform\" section, registered as a representation of kind waveform).",
        "responses": {
          "200": {
            "description": "The picture.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                },
                "description": "The content id of the picture (for sheets, of the storyboard's WebVTT file and the sheet's name)."
              }
            },
            "content": {
              "image/png": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          },
          "404": {
            "description": "No such asset (or not visible to the token), no such picture of it on this host, or a ?v= that is not the current picture's content id.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "304": {
            "description": "If-None-Match named the current picture's content id: nothing sent."
          }
        }
      }
    },
    "/api/assets/{id}/storyboard.vtt": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]$",
            "examples": [
              "0000000000000000000000000g",
              "asset:zveag3axeyfnzaxzy820mb3yqw"
            ]
          },
          "description": "An asset id: 26 characters of Crockford base32 (any case), the last one of 0 4 8 c g m r w (its two low bits are zero padding: an id is 128 bits); \"asset:\" may lead."
        },
        {
          "name": "v",
          "in": "query",
          "required": false,
          "schema": {
            "type": "string"
          },
          "description": "The picture's content id (its ETag): the answer is then cached as immutable (Cache-Control: private, max-age=31536000, immutable); a content id that is no longer current answers 404. Without it: Cache-Control: private, no-cache (revalidated by ETag)."
        }
      ],
      "get": {
        "operationId": "getAssetStoryboardCues",
        "tags": [
          "pictures"
        ],
        "summary": "The asset's newest storyboard: its WebVTT file, each cue naming its sheet here (storyboard/NAME-N.jpg?v=ID#xywh=x,y,w,h, relative to this address).",
        "responses": {
          "200": {
            "description": "The WebVTT file.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                },
                "description": "The content id of the picture (for sheets, of the storyboard's WebVTT file and the sheet's name)."
              }
            },
            "content": {
              "text/vtt": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          },
          "404": {
            "description": "No such asset (or not visible to the token), no such picture of it on this host, or a ?v= that is not the current picture's content id.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "304": {
            "description": "If-None-Match named the current picture's content id: nothing sent."
          }
        }
      }
    },
    "/api/assets/{id}/storyboard.json": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]$",
            "examples": [
              "0000000000000000000000000g",
              "asset:zveag3axeyfnzaxzy820mb3yqw"
            ]
          },
          "description": "An asset id: 26 characters of Crockford base32 (any case), the last one of 0 4 8 c g m r w (its two low bits are zero padding: an id is 128 bits); \"asset:\" may lead."
        },
        {
          "name": "v",
          "in": "query",
          "required": false,
          "schema": {
            "type": "string"
          },
          "description": "The picture's content id (its ETag): the answer is then cached as immutable (Cache-Control: private, max-age=31536000, immutable); a content id that is no longer current answers 404. Without it: Cache-Control: private, no-cache (revalidated by ETag)."
        }
      ],
      "get": {
        "operationId": "getAssetStoryboardIndex",
        "tags": [
          "pictures"
        ],
        "summary": "The storyboard's JSON index: the layout, the sheets' names, and each tile's start, end, frameTime, sheet, x and y.",
        "responses": {
          "200": {
            "description": "The index.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                },
                "description": "The content id of the picture (for sheets, of the storyboard's WebVTT file and the sheet's name)."
              }
            },
            "content": {
              "application/json": {}
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          },
          "404": {
            "description": "No such asset (or not visible to the token), no such picture of it on this host, or a ?v= that is not the current picture's content id.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "304": {
            "description": "If-None-Match named the current picture's content id: nothing sent."
          }
        }
      }
    },
    "/api/assets/{id}/storyboard/{sheet}": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^(asset:)?[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]$",
            "examples": [
              "0000000000000000000000000g",
              "asset:zveag3axeyfnzaxzy820mb3yqw"
            ]
          },
          "description": "An asset id: 26 characters of Crockford base32 (any case), the last one of 0 4 8 c g m r w (its two low bits are zero padding: an id is 128 bits); \"asset:\" may lead."
        },
        {
          "name": "v",
          "in": "query",
          "required": false,
          "schema": {
            "type": "string"
          },
          "description": "The picture's content id (its ETag): the answer is then cached as immutable (Cache-Control: private, max-age=31536000, immutable); a content id that is no longer current answers 404. Without it: Cache-Control: private, no-cache (revalidated by ETag)."
        },
        {
          "name": "sheet",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          },
          "description": "A sheet's name, NAME-N.jpg (or .webp, .png) as the WebVTT file names it; nothing else beside it is served."
        }
      ],
      "get": {
        "operationId": "getAssetStoryboardSheet",
        "tags": [
          "pictures"
        ],
        "summary": "One sprite sheet of the asset's storyboard.",
        "responses": {
          "200": {
            "description": "The sheet.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                },
                "description": "The content id of the picture (for sheets, of the storyboard's WebVTT file and the sheet's name)."
              }
            },
            "content": {
              "image/jpeg": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              },
              "image/png": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              },
              "image/webp": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          },
          "421": {
            "$ref": "#/components/responses/MisdirectedRequest"
          },
          "404": {
            "description": "No such asset (or not visible to the token), no such picture of it on this host, or a ?v= that is not the current picture's content id.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "304": {
            "description": "If-None-Match named the current picture's content id: nothing sent."
          }
        }
      }
    },
    "/api/queue/pauses": {
      "get": {
        "operationId": "listQueuePauses",
        "tags": [
          "farm"
        ],
        "summary": "The pauses of claiming in force, kept in the queue: every coordinator obeys them.",
        "responses": {
          "200": {
            "description": "The pauses, the farm's first.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "pauses"
                  ],
                  "properties": {
                    "pauses": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/QueuePause"
                      }
                    },
                    "resumed": {
                      "type": "boolean",
                      "description": "For a resume: whether the scope was paused."
                    }
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          }
        }
      }
    },
    "/api/queue/pause": {
      "post": {
        "operationId": "pauseQueue",
        "tags": [
          "farm"
        ],
        "summary": "Stop coordinators taking new jobs: the whole farm, a host or one coordinator (as `mediafarm queue pause`). Running jobs go on. Idempotent.",
        "parameters": [
          {
            "name": "host",
            "in": "query",
            "required": false,
            "description": "Only the coordinators of this host (no colon).",
            "schema": {
              "type": "string",
              "maxLength": 255,
              "pattern": "^[^:]+$",
              "examples": [
                "render1"
              ]
            }
          },
          {
            "name": "coordinator",
            "in": "query",
            "required": false,
            "description": "Only this coordinator (HOST:PID:RANDOM). Neither host nor coordinator: the whole farm.",
            "schema": {
              "type": "string",
              "maxLength": 400,
              "pattern": "^[^:]+:.+$",
              "examples": [
                "render1:4242:ab12"
              ]
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The pauses in force, this one among them.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "pauses"
                  ],
                  "properties": {
                    "pauses": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/QueuePause"
                      }
                    },
                    "resumed": {
                      "type": "boolean",
                      "description": "For a resume: whether the scope was paused."
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/CrossOrigin"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          }
        }
      }
    },
    "/api/queue/resume": {
      "post": {
        "operationId": "resumeQueue",
        "tags": [
          "farm"
        ],
        "summary": "Lift a pause (as `mediafarm queue resume`); coordinators claim again within 2 s.",
        "parameters": [
          {
            "name": "host",
            "in": "query",
            "required": false,
            "description": "Only the coordinators of this host (no colon).",
            "schema": {
              "type": "string",
              "maxLength": 255,
              "pattern": "^[^:]+$",
              "examples": [
                "render1"
              ]
            }
          },
          {
            "name": "coordinator",
            "in": "query",
            "required": false,
            "description": "Only this coordinator (HOST:PID:RANDOM). Neither host nor coordinator: the whole farm.",
            "schema": {
              "type": "string",
              "maxLength": 400,
              "pattern": "^[^:]+:.+$",
              "examples": [
                "render1:4242:ab12"
              ]
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The pauses still in force, and whether the scope was paused.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "pauses"
                  ],
                  "properties": {
                    "pauses": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/QueuePause"
                      }
                    },
                    "resumed": {
                      "type": "boolean",
                      "description": "For a resume: whether the scope was paused."
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/CrossOrigin"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          }
        }
      }
    },
    "/api/queue/history": {
      "get": {
        "operationId": "getQueueHistory",
        "tags": [
          "farm"
        ],
        "summary": "The farm's history for charts, from the queue itself: jobs ended by outcome, the queue's depth, and p50/p95 wait and run times, over the last hour by the minute or the last 72 hours by the hour.",
        "parameters": [
          {
            "name": "span",
            "in": "query",
            "required": false,
            "description": "hour (default) or days.",
            "schema": {
              "type": "string",
              "enum": [
                "hour",
                "days"
              ]
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The buckets, oldest first.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "span",
                    "bucketSeconds",
                    "buckets"
                  ],
                  "properties": {
                    "span": {
                      "type": "string",
                      "enum": [
                        "hour",
                        "days"
                      ]
                    },
                    "bucketSeconds": {
                      "type": "number"
                    },
                    "buckets": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/HistoryBucket"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/QueueUnavailable"
          }
        }
      }
    },
    "/api/openapi.json": {
      "get": {
        "operationId": "getApiDocument",
        "tags": [
          "health"
        ],
        "summary": "This document (OpenAPI 3.1), as docs/openapi.json holds it; no token needed.",
        "security": [],
        "responses": {
          "200": {
            "description": "The document.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": {
        "type": "http",
        "scheme": "bearer"
      }
    },
    "parameters": {
      "id": {
        "name": "id",
        "in": "path",
        "required": true,
        "schema": {
          "type": "integer",
          "minimum": 1
        }
      }
    },
    "responses": {
      "BadRequest": {
        "description": "A query parameter is malformed.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "Missing or wrong bearer token.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "NotFound": {
        "description": "No such job.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Conflict": {
        "description": "The job's state does not allow the change, or another live job holds its unique key (cancel that one first), or a job it waits for failed (retry that one first).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "QueueUnavailable": {
        "description": "The queue does not answer.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "CrossOrigin": {
        "description": "A browser request from another site (its Origin is not this server).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "MisdirectedRequest": {
        "description": "The Host header names neither an IP address, localhost, the listen address nor an --allowed-host name (DNS rebinding protection).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "required": [
          "error"
        ],
        "additionalProperties": false,
        "properties": {
          "error": {
            "type": "string"
          },
          "issues": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "path",
                "message"
              ],
              "additionalProperties": false,
              "properties": {
                "path": {
                  "type": "string"
                },
                "message": {
                  "type": "string"
                }
              }
            }
          }
        }
      },
      "Health": {
        "type": "object",
        "required": [
          "status",
          "draining",
          "loopAgeSeconds"
        ],
        "additionalProperties": false,
        "properties": {
          "status": {
            "enum": [
              "ok",
              "stalled"
            ]
          },
          "draining": {
            "type": "boolean"
          },
          "loopAgeSeconds": {
            "type": "object",
            "additionalProperties": {
              "type": "number"
            }
          },
          "stalled": {
            "type": "array",
            "items": {
              "type": "string"
            }
          }
        }
      },
      "Ready": {
        "type": "object",
        "required": [
          "status",
          "queue"
        ],
        "additionalProperties": false,
        "properties": {
          "status": {
            "enum": [
              "ready",
              "draining",
              "queue unavailable"
            ]
          },
          "queue": {
            "type": "string"
          },
          "error": {
            "type": "string"
          }
        }
      },
      "Submitted": {
        "type": "object",
        "required": [
          "id",
          "name",
          "queued"
        ],
        "additionalProperties": false,
        "properties": {
          "id": {
            "type": "integer"
          },
          "name": {
            "type": "string"
          },
          "queued": {
            "type": "boolean"
          },
          "warnings": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "What the asset library could not record of the job (which assets it reads); the job is queued all the same."
          }
        }
      },
      "JobState": {
        "enum": [
          "waiting",
          "queued",
          "running",
          "succeeded",
          "failed",
          "cancelled",
          "dead"
        ]
      },
      "Job": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "id",
          "name",
          "state",
          "priority",
          "attempt",
          "maxAttempts",
          "createdAt",
          "runAt",
          "errors"
        ],
        "properties": {
          "id": {
            "type": "integer"
          },
          "name": {
            "type": "string"
          },
          "state": {
            "$ref": "#/components/schemas/JobState"
          },
          "priority": {
            "type": "integer"
          },
          "attempt": {
            "type": "integer",
            "minimum": 0
          },
          "maxAttempts": {
            "type": "integer",
            "minimum": 1
          },
          "progress": {
            "type": "number",
            "minimum": 0,
            "maximum": 1
          },
          "phase": {
            "type": "string",
            "description": "What a running job is doing now (starting, inspecting, exporting, publishing...); absent once the job has ended."
          },
          "host": {
            "type": "string",
            "description": "The host that runs the job (holding its lease), or that ran its latest attempt."
          },
          "owner": {
            "type": "string",
            "description": "The coordinator holding a running job's lease (host:pid:random)."
          },
          "workerPID": {
            "type": "integer"
          },
          "uniqueKey": {
            "type": "string"
          },
          "createdAt": {
            "type": "string",
            "format": "date-time"
          },
          "runAt": {
            "type": "string",
            "format": "date-time"
          },
          "startedAt": {
            "type": "string",
            "format": "date-time"
          },
          "finishedAt": {
            "type": "string",
            "format": "date-time"
          },
          "updatedAt": {
            "type": "string",
            "format": "date-time"
          },
          "after": {
            "type": "array",
            "items": {
              "type": "integer"
            },
            "description": "The jobs this one waits for (absent when none)."
          },
          "afterPolicy": {
            "enum": [
              "success",
              "always"
            ],
            "description": "success: runs when every dependency succeeded, fails when one does not; always: runs once every dependency ended."
          },
          "waitingFor": {
            "type": "integer",
            "minimum": 0,
            "description": "A waiting job: how many of its dependencies have not ended yet."
          },
          "blockedBy": {
            "type": "integer",
            "description": "The dependency whose failure failed this job; retrying that one brings this one back."
          },
          "requires": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "Capabilities a host must provide to run the job (coordinator --provides)."
          },
          "etaSeconds": {
            "type": "number",
            "minimum": 0
          },
          "worker": {
            "type": "object",
            "description": "The lease of a job that holds one: the host, the coordinator, the worker's process id and when the lease expires.",
            "required": [
              "host",
              "owner",
              "leaseExpiresAt"
            ],
            "additionalProperties": false,
            "properties": {
              "host": {
                "type": "string"
              },
              "owner": {
                "type": "string"
              },
              "pid": {
                "type": "integer"
              },
              "leaseExpiresAt": {
                "type": "string",
                "format": "date-time"
              }
            }
          },
          "errors": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "attempt",
                "at",
                "message"
              ],
              "additionalProperties": false,
              "properties": {
                "attempt": {
                  "type": "integer"
                },
                "at": {
                  "type": "string",
                  "format": "date-time"
                },
                "message": {
                  "type": "string"
                },
                "startedAt": {
                  "type": "string",
                  "format": "date-time",
                  "description": "When the attempt started (absent when none ran: its dependency failed)."
                },
                "host": {
                  "type": "string",
                  "description": "The host that ran the attempt."
                }
              }
            }
          },
          "result": {
            "description": "The worker's report of the last attempt (inspection, scans, export statistics)."
          },
          "manifest": {
            "description": "The manifest as submitted."
          }
        }
      },
      "JobPage": {
        "type": "object",
        "required": [
          "jobs"
        ],
        "additionalProperties": false,
        "properties": {
          "jobs": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Job"
            }
          },
          "next": {
            "type": "integer"
          }
        }
      },
      "Facts": {
        "type": "object",
        "required": [
          "mediaType",
          "duration",
          "size",
          "hasAudio"
        ],
        "properties": {
          "mediaType": {
            "enum": [
              "video",
              "audio",
              "image"
            ]
          },
          "duration": {
            "type": "object",
            "description": "Exact: value/timescale, and seconds.",
            "properties": {
              "value": {
                "type": "integer"
              },
              "timescale": {
                "type": "integer"
              },
              "seconds": {
                "type": "number"
              }
            }
          },
          "size": {
            "type": "integer"
          },
          "container": {
            "type": "string"
          },
          "codec": {
            "type": "string"
          },
          "audioCodec": {
            "type": "string"
          },
          "frameRate": {
            "type": "number"
          },
          "width": {
            "type": "integer"
          },
          "height": {
            "type": "integer"
          },
          "rotation": {
            "type": "number"
          },
          "hasAudio": {
            "type": "boolean"
          },
          "creationDate": {
            "type": "string"
          },
          "location": {
            "type": "string"
          },
          "make": {
            "type": "string"
          },
          "model": {
            "type": "string"
          }
        }
      },
      "Code": {
        "type": "object",
        "required": [
          "symbology"
        ],
        "properties": {
          "symbology": {
            "type": "string"
          },
          "payload": {
            "type": "string"
          },
          "payloadBase64": {
            "type": "string"
          }
        }
      },
      "Asset": {
        "type": "object",
        "required": [
          "id",
          "sha256",
          "facts",
          "subtypes",
          "date",
          "addedAt",
          "codes"
        ],
        "properties": {
          "id": {
            "type": "string",
            "pattern": "^[0-9a-hjkmnp-tv-z]{25}[048cgmrw]$",
            "description": "The content identifier: the same on every host."
          },
          "sha256": {
            "type": "string"
          },
          "facts": {
            "$ref": "#/components/schemas/Facts"
          },
          "subtypes": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "date": {
            "type": "string"
          },
          "addedAt": {
            "type": "string"
          },
          "codes": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Code"
            }
          },
          "path": {
            "type": "string",
            "description": "Where this host keeps it; absent when it is not on this host."
          }
        }
      },
      "AssetPage": {
        "type": "object",
        "required": [
          "assets"
        ],
        "properties": {
          "assets": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Asset"
            }
          },
          "nextCursor": {
            "type": "string",
            "description": "Give it as `after` for the next page; absent on the last."
          }
        }
      },
      "Representation": {
        "type": "object",
        "required": [
          "source",
          "output",
          "jobID",
          "jobName",
          "parameters",
          "host",
          "path",
          "createdAt",
          "kind"
        ],
        "properties": {
          "source": {
            "type": "string"
          },
          "output": {
            "type": "string"
          },
          "jobID": {
            "type": "integer"
          },
          "jobName": {
            "type": "string"
          },
          "parameters": {
            "type": "string",
            "description": "The job's manifest (JSON)."
          },
          "host": {
            "type": "string"
          },
          "path": {
            "type": "string"
          },
          "createdAt": {
            "type": "string"
          },
          "kind": {
            "enum": [
              "export",
              "poster",
              "storyboard",
              "waveform"
            ],
            "description": "An export of the asset, or a picture of it (its poster, its storyboard by its first sheet, its waveform)."
          }
        }
      },
      "AssetDetail": {
        "type": "object",
        "required": [
          "asset",
          "locations",
          "albums",
          "representations",
          "derivedFrom",
          "jobs"
        ],
        "properties": {
          "asset": {
            "$ref": "#/components/schemas/Asset"
          },
          "locations": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "host",
                "path",
                "state"
              ],
              "properties": {
                "host": {
                  "type": "string"
                },
                "path": {
                  "type": "string"
                },
                "state": {
                  "enum": [
                    "present",
                    "missing",
                    "changed"
                  ]
                },
                "seenAt": {
                  "type": "string"
                }
              }
            }
          },
          "albums": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "representations": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Representation"
            }
          },
          "derivedFrom": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Representation"
            }
          },
          "jobs": {
            "type": "array",
            "items": {
              "type": "integer"
            }
          }
        }
      },
      "Resolution": {
        "type": "object",
        "required": [
          "id",
          "status",
          "paths",
          "hosts"
        ],
        "properties": {
          "id": {
            "type": "string",
            "pattern": "^[0-9a-hjkmnp-tv-z]{25}[048cgmrw]$"
          },
          "status": {
            "enum": [
              "found",
              "several",
              "missing",
              "notOnThisHost",
              "unknown"
            ]
          },
          "paths": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "hosts": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "reason": {
            "type": "string"
          }
        }
      },
      "Album": {
        "type": "object",
        "required": [
          "name",
          "smart",
          "count"
        ],
        "properties": {
          "name": {
            "type": "string"
          },
          "smart": {
            "type": "boolean"
          },
          "count": {
            "type": "integer"
          },
          "createdAt": {
            "type": "string"
          }
        }
      },
      "ChangeList": {
        "type": "object",
        "required": [
          "changes",
          "token",
          "more"
        ],
        "properties": {
          "token": {
            "type": "string"
          },
          "more": {
            "type": "boolean"
          },
          "changes": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "token",
                "at",
                "kind"
              ],
              "properties": {
                "token": {
                  "type": "string"
                },
                "at": {
                  "type": "string"
                },
                "kind": {
                  "enum": [
                    "assetAdded",
                    "assetUpdated",
                    "assetRemoved",
                    "locationAdded",
                    "locationMissing",
                    "locationChanged",
                    "locationRemoved",
                    "albumCreated",
                    "albumDeleted",
                    "albumAssetAdded",
                    "albumAssetRemoved",
                    "representationAdded",
                    "tokenCreated",
                    "tokenRevoked"
                  ]
                },
                "assetID": {
                  "type": "string"
                },
                "album": {
                  "type": "string"
                },
                "host": {
                  "type": "string"
                },
                "path": {
                  "type": "string"
                },
                "detail": {
                  "type": "string"
                }
              }
            }
          }
        }
      },
      "Coordinator": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "owner",
          "host",
          "slots",
          "busy",
          "free",
          "draining",
          "startedAt",
          "seenAt",
          "secondsSinceReport",
          "silent",
          "thisCoordinator",
          "paused",
          "provides"
        ],
        "properties": {
          "owner": {
            "type": "string",
            "description": "Its name in leases: host:pid:random."
          },
          "host": {
            "type": "string"
          },
          "slots": {
            "type": "integer",
            "minimum": 0
          },
          "busy": {
            "type": "integer",
            "minimum": 0
          },
          "free": {
            "type": "integer",
            "minimum": 0
          },
          "draining": {
            "type": "boolean"
          },
          "startedAt": {
            "type": "string",
            "format": "date-time"
          },
          "seenAt": {
            "type": "string",
            "format": "date-time",
            "description": "Its last report."
          },
          "secondsSinceReport": {
            "type": "number",
            "minimum": 0
          },
          "silent": {
            "type": "boolean",
            "description": "Not heard from for three report intervals: it died or lost the queue."
          },
          "thisCoordinator": {
            "type": "boolean",
            "description": "The coordinator answering."
          },
          "paused": {
            "type": "boolean",
            "description": "A pause stops its claims (the farm's, its host's or its own: POST /api/queue/pause): it takes no new job."
          },
          "provides": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "What it provides (coordinator --provides): jobs that require these may run there."
          }
        }
      },
      "Delivery": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "id",
          "jobID",
          "type",
          "url",
          "origin",
          "state",
          "attempts",
          "eventAt"
        ],
        "description": "One terminal event of a job to one URL.",
        "properties": {
          "id": {
            "type": "integer",
            "description": "Also the message's id: webhook-id is msg_ followed by it, the same on every attempt."
          },
          "jobID": {
            "type": "integer"
          },
          "type": {
            "enum": [
              "job.succeeded",
              "job.failed",
              "job.dead",
              "job.cancelled"
            ]
          },
          "url": {
            "type": "string"
          },
          "origin": {
            "enum": [
              "endpoint",
              "notify"
            ],
            "description": "endpoint: the farm's (coordinator --webhook); notify: the job's own."
          },
          "state": {
            "enum": [
              "pending",
              "delivered",
              "failed",
              "refused"
            ],
            "description": "failed: given up after the retry window; refused: its host is not allowed, never requested."
          },
          "attempts": {
            "type": "integer",
            "minimum": 0
          },
          "eventAt": {
            "type": "string",
            "format": "date-time",
            "description": "When the event was recorded, with the state change."
          },
          "nextAttemptAt": {
            "type": "string",
            "format": "date-time"
          },
          "lastStatus": {
            "type": "integer",
            "description": "The HTTP status of the last answer."
          },
          "lastError": {
            "type": "string"
          },
          "deliveredAt": {
            "type": "string",
            "format": "date-time"
          }
        }
      },
      "CoordinatorEvent": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "event",
          "at"
        ],
        "description": "What the farm tells of its jobs as they happen. The same JSON is each line of `coordinator --json` and the data of each server-sent event of GET /api/events (named by `event`); absent fields are left out.",
        "properties": {
          "event": {
            "type": "string",
            "enum": [
              "started",
              "progress",
              "finished",
              "notice",
              "submitted",
              "cancelled",
              "retried"
            ]
          },
          "at": {
            "type": "number",
            "description": "When it happened: seconds since 1970 (UTC)."
          },
          "job": {
            "type": "integer",
            "description": "The job's id."
          },
          "name": {
            "type": "string"
          },
          "attempt": {
            "type": "integer"
          },
          "pid": {
            "type": "integer",
            "description": "The worker process (started)."
          },
          "queuedFor": {
            "type": "number",
            "description": "Seconds between the job's being due and its worker's start (started)."
          },
          "hops": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "woke",
              "claimed",
              "handed"
            ],
            "description": "When the claimer's turn began, the claim returned and the job was handed to its worker (started), seconds since 1970.",
            "properties": {
              "woke": {
                "type": "number"
              },
              "claimed": {
                "type": "number"
              },
              "handed": {
                "type": "number"
              }
            }
          },
          "fraction": {
            "type": "number",
            "minimum": 0,
            "maximum": 1
          },
          "phase": {
            "type": "string"
          },
          "state": {
            "type": "string",
            "description": "The job's state after the event (finished, cancelled, retried)."
          },
          "seconds": {
            "type": "number",
            "description": "How long the attempt took (finished)."
          },
          "message": {
            "type": "string",
            "description": "Why the attempt ended as it did (finished), or the notice."
          },
          "queued": {
            "type": "boolean",
            "description": "false: a live job already held the unique key (submitted)."
          }
        }
      },
      "QueuePause": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "scope",
          "since"
        ],
        "properties": {
          "scope": {
            "type": "string",
            "pattern": "^(farm|host:[^:]+|coordinator:.+:.+)$",
            "description": "farm, host:NAME or coordinator:OWNER."
          },
          "since": {
            "type": "string",
            "format": "date-time"
          },
          "by": {
            "type": "string",
            "description": "Who paused it (the command line, the console, the API)."
          }
        }
      },
      "HistoryBucket": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "start",
          "ended"
        ],
        "properties": {
          "start": {
            "type": "string",
            "format": "date-time"
          },
          "ended": {
            "type": "object",
            "description": "Jobs that ended in the bucket by state.",
            "additionalProperties": {
              "type": "integer",
              "minimum": 0
            }
          },
          "queued": {
            "type": "integer",
            "minimum": 0,
            "description": "The queue's depth at the bucket's last sample (absent: no coordinator sampled it)."
          },
          "running": {
            "type": "integer",
            "minimum": 0
          },
          "waitP50": {
            "type": "number",
            "minimum": 0,
            "description": "Seconds from due to started of the jobs that ended in it."
          },
          "waitP95": {
            "type": "number",
            "minimum": 0
          },
          "runP50": {
            "type": "number",
            "minimum": 0,
            "description": "Seconds from started to ended."
          },
          "runP95": {
            "type": "number",
            "minimum": 0
          }
        }
      },
      "Manifest": {
        "title": "MediaFarm job manifest, version 1",
        "description": "Relative paths resolve against the manifest's folder. Outputs (export.output, report) must lie under the output roots. A manifest with only 'input' is an inspection job.",
        "type": "object",
        "additionalProperties": false,
        "required": [
          "version"
        ],
        "oneOf": [
          {
            "required": [
              "input"
            ]
          },
          {
            "required": [
              "edits"
            ]
          }
        ],
        "properties": {
          "version": {
            "const": 1
          },
          "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "Defaults to the manifest's file name."
          },
          "input": {
            "$ref": "#/components/schemas/ManifestSource",
            "description": "One whole asset; shorthand for a single edit."
          },
          "edits": {
            "type": "array",
            "minItems": 1,
            "description": "Pieces of sources placed end to end (AVMutableComposition.insertTimeRange).",
            "items": {
              "type": "object",
              "additionalProperties": false,
              "required": [
                "source"
              ],
              "properties": {
                "source": {
                  "$ref": "#/components/schemas/ManifestSource"
                },
                "start": {
                  "$ref": "#/components/schemas/ManifestTime",
                  "description": "Default 0: the start of the source."
                },
                "duration": {
                  "$ref": "#/components/schemas/ManifestTime",
                  "description": "Default: to the end of the source."
                }
              }
            }
          },
          "scale": {
            "type": "array",
            "description": "Ranges of composition time (after edits) played at another speed; they must not overlap. Needs 'export'.",
            "items": {
              "type": "object",
              "additionalProperties": false,
              "required": [
                "start",
                "duration"
              ],
              "oneOf": [
                {
                  "required": [
                    "toDuration"
                  ]
                },
                {
                  "required": [
                    "rate"
                  ]
                }
              ],
              "properties": {
                "start": {
                  "$ref": "#/components/schemas/ManifestTime"
                },
                "duration": {
                  "$ref": "#/components/schemas/ManifestTime"
                },
                "toDuration": {
                  "$ref": "#/components/schemas/ManifestTime",
                  "description": "The range plays in this long; rate = duration / toDuration, 1/32...32."
                },
                "rate": {
                  "$ref": "#/components/schemas/ManifestRate",
                  "description": "Playback rate, 1/32...32 (0.25 is four times slower)."
                }
              }
            }
          },
          "audio": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "timePitch": {
                "enum": [
                  "spectral",
                  "timeDomain",
                  "varispeed"
                ],
                "default": "spectral",
                "description": "spectral: Rubber Band R3, for music; timeDomain: Rubber Band R2, for speech; varispeed: the pitch follows the rate."
              }
            }
          },
          "scan": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "symbologies"
            ],
            "properties": {
              "symbologies": {
                "type": "array",
                "uniqueItems": true,
                "items": {
                  "enum": [
                    "qr",
                    "aztec",
                    "dataMatrix",
                    "pdf417",
                    "code128",
                    "code39",
                    "code93",
                    "ean8",
                    "ean13",
                    "upce",
                    "interleaved2of5",
                    "itf14",
                    "codabar",
                    "databar"
                  ]
                }
              },
              "regionOfInterest": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "x",
                  "y",
                  "width",
                  "height"
                ],
                "properties": {
                  "x": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1
                  },
                  "y": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1
                  },
                  "width": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": 1
                  },
                  "height": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": 1
                  }
                }
              },
              "interval": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "Scan every this long; 0 (default) scans every frame."
              },
              "maxCodesPerFrame": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 64
              },
              "images": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "output"
                ],
                "description": "A picture of the frame where each code was first seen (exact, from its source), so a page can show it: the report's scan.images[i] is the picture of scan.codes[i].",
                "properties": {
                  "maxWidth": {
                    "$ref": "#/components/schemas/ManifestPictureSide"
                  },
                  "maxHeight": {
                    "$ref": "#/components/schemas/ManifestPictureSide"
                  },
                  "format": {
                    "$ref": "#/components/schemas/ManifestPictureFormat"
                  },
                  "quality": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "default": 0.85
                  },
                  "output": {
                    "$ref": "#/components/schemas/ManifestPath",
                    "description": "With {index} in the file's name: the code's place in scan.codes, from 1 (\"codes/code-{index}.jpg\")."
                  }
                }
              }
            }
          },
          "export": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "mode",
              "output"
            ],
            "properties": {
              "mode": {
                "enum": [
                  "passthrough",
                  "constantFrameRate"
                ]
              },
              "output": {
                "$ref": "#/components/schemas/ManifestPath",
                "description": "The container comes from the extension (.mp4, .m4v, .mov, .qt, .mkv) unless fileType says."
              },
              "fileType": {
                "enum": [
                  "mp4",
                  "mov",
                  "mkv"
                ]
              },
              "frameRate": {
                "$ref": "#/components/schemas/ManifestRate",
                "description": "constantFrameRate only; 1...240, default 30."
              },
              "frameDuration": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "constantFrameRate only; 1/240...1 s. Exclusive with frameRate."
              },
              "faststart": {
                "type": "boolean",
                "description": "Index first; default true for mp4 and mov, not allowed for mkv."
              },
              "cuts": {
                "enum": [
                  "exact",
                  "smart",
                  "keyframe"
                ],
                "default": "exact",
                "description": "passthrough only. exact: every edit shows exactly its frames and samples; in mp4 and mov the packets from the keyframe before a cut are copied for decoding and hidden by an edit list (nothing re-encoded; for players that honour multi-entry edit lists); in mkv it is smart. smart: exact with no edit list hiding anything, for every player: the frames from a cut to the next keyframe are re-encoded with the source's codec (H.264, HEVC), the rest copied, and the audio is encoded. keyframe: pure copying; a cut snaps back to the keyframe before it and those frames are shown."
              },
              "chunkSeconds": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "constantFrameRate only, under a coordinator: encode the export in chunks of about this many seconds of output (2 to 3600), cut near source keyframes; each chunk is a job of its own that any worker of any host runs, and the job joins them when all have succeeded (a killed worker loses one chunk at most). `mediafarm run` exports it whole."
              },
              "chunkAbove": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "With chunkSeconds: chunk the export only when it is longer than this many seconds; a shorter one is encoded whole (a coordinator's --chunk-above does the same for exports that give no chunkSeconds)."
              },
              "frames": {
                "type": "array",
                "items": {
                  "type": "integer",
                  "minimum": 0
                },
                "minItems": 2,
                "maxItems": 2,
                "description": "constantFrameRate only: export only the output frames [first, end) (end excluded), video only, timed from 0: one chunk of a chunked export."
              },
              "poster": {
                "$ref": "#/components/schemas/ManifestPoster",
                "description": "A poster of the exported movie, made from it once it is written (a chunked export's, once its chunks are joined): the same fields as the top-level poster, times in the export's time."
              },
              "join": {
                "type": "array",
                "minItems": 1,
                "description": "constantFrameRate only, set by the coordinator on a chunked job's last run: the chunks, in order, to join into the output instead of encoding (their video copied, the audio rendered once over the whole composition).",
                "items": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "output",
                    "frames"
                  ],
                  "properties": {
                    "output": {
                      "type": "string",
                      "minLength": 1
                    },
                    "frames": {
                      "type": "array",
                      "items": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "minItems": 2,
                      "maxItems": 2
                    },
                    "job": {
                      "type": "integer",
                      "minimum": 1
                    },
                    "attempts": {
                      "type": "integer",
                      "minimum": 0
                    }
                  }
                }
              },
              "video": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                  "codec": {
                    "const": "h264"
                  },
                  "crf": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 51,
                    "default": 20
                  },
                  "preset": {
                    "enum": [
                      "ultrafast",
                      "superfast",
                      "veryfast",
                      "faster",
                      "fast",
                      "medium",
                      "slow",
                      "slower",
                      "veryslow"
                    ],
                    "default": "veryfast"
                  },
                  "threads": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 64,
                    "default": 0
                  }
                }
              },
              "audio": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                  "policy": {
                    "enum": [
                      "auto",
                      "copy",
                      "reencode",
                      "drop"
                    ],
                    "default": "auto"
                  },
                  "codec": {
                    "const": "aac"
                  },
                  "bitrate": {
                    "type": "integer",
                    "minimum": 16000,
                    "maximum": 512000,
                    "default": 128000
                  }
                }
              }
            }
          },
          "images": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "output"
            ],
            "description": "Pictures of the input at times (AVAssetImageGenerator): by default each is the keyframe nearest its time (one frame decoded); a tolerance of 0 gives the frame shown at that time exactly. Pictures keep the display aspect (non-square pixels, the track's rotation). Needs \"input\" (not edits or scale). Any picture that cannot be made (a time past the end) fails the job, naming its time, and nothing is published.",
            "oneOf": [
              {
                "required": [
                  "times"
                ]
              },
              {
                "required": [
                  "every"
                ]
              },
              {
                "required": [
                  "count"
                ]
              }
            ],
            "properties": {
              "times": {
                "type": "array",
                "minItems": 1,
                "maxItems": 100000,
                "items": {
                  "$ref": "#/components/schemas/ManifestTime"
                },
                "description": "Seconds from the video's first frame."
              },
              "every": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "A picture every this many seconds from 0 (at least 0.01) while inside the movie."
              },
              "count": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100000,
                "description": "This many pictures spread over the movie, each in the middle of its part."
              },
              "tolerance": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "How far before or after its time a picture may be; 0: exact. Default: any (the nearest keyframe)."
              },
              "toleranceBefore": {
                "$ref": "#/components/schemas/ManifestTime"
              },
              "toleranceAfter": {
                "$ref": "#/components/schemas/ManifestTime"
              },
              "maxWidth": {
                "$ref": "#/components/schemas/ManifestPictureSide"
              },
              "maxHeight": {
                "$ref": "#/components/schemas/ManifestPictureSide"
              },
              "format": {
                "$ref": "#/components/schemas/ManifestPictureFormat"
              },
              "quality": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.85,
                "description": "JPEG and WebP."
              },
              "output": {
                "$ref": "#/components/schemas/ManifestPath",
                "description": "A path or s3:// address with {index} (1, 2, ...) in the file's name, unless there is one picture: \"thumbs/thumb-{index}.jpg\"."
              }
            }
          },
          "poster": {
            "$ref": "#/components/schemas/ManifestPoster",
            "description": "One picture that stands for the input. Needs \"input\" (not edits or scale)."
          },
          "storyboard": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "output"
            ],
            "description": "Sprite sheets of small tiles over the input (one keyframe decoded per tile), a WebVTT file whose cues point into them with #xywh= fragments (Video.js, JW Player, Shaka and Jellyfin read it) and a JSON index. Needs \"input\" (not edits or scale).",
            "properties": {
              "every": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "A tile every this many seconds (at least 0.1). Exclusive with tiles."
              },
              "tiles": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100000,
                "description": "This many tiles spread over the movie. Default (neither given): 50 under 15 minutes, 100 above, as Mux makes them."
              },
              "tileWidth": {
                "type": "integer",
                "minimum": 16,
                "maximum": 3840,
                "default": 160,
                "description": "Tiles this wide; their height from the display aspect."
              },
              "columns": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "default": 10
              },
              "rows": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "default": 10
              },
              "format": {
                "$ref": "#/components/schemas/ManifestPictureFormat"
              },
              "quality": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.7
              },
              "output": {
                "type": "string",
                "pattern": "\\.vtt$",
                "description": "The WebVTT file, NAME.vtt; the sheets are NAME-1.jpg (and on) and the index NAME.json, beside it."
              },
              "chunkSeconds": {
                "$ref": "#/components/schemas/ManifestTime",
                "description": "Under a coordinator: make the storyboard in parts of about this many seconds of the movie (2 to 3600; whole sheets), each a job of its own that any worker of any host runs, then join them (sheets copied, nothing decoded again). The result equals the storyboard made whole. The manifest then has no export, scan or other picture section. `mediafarm run` makes it whole."
              },
              "part": {
                "type": "array",
                "items": {
                  "type": "integer",
                  "minimum": 0
                },
                "minItems": 2,
                "maxItems": 2,
                "description": "Set by the coordinator: one part, the tiles [first, end) (whole sheets)."
              },
              "join": {
                "type": "array",
                "minItems": 1,
                "description": "Set by the coordinator on the last run: the parts, in order, to join.",
                "items": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "output",
                    "tiles"
                  ],
                  "properties": {
                    "output": {
                      "type": "string",
                      "minLength": 1
                    },
                    "tiles": {
                      "type": "array",
                      "items": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "minItems": 2,
                      "maxItems": 2
                    },
                    "job": {
                      "type": "integer",
                      "minimum": 1
                    },
                    "attempts": {
                      "type": "integer",
                      "minimum": 0
                    }
                  }
                }
              }
            }
          },
          "waveform": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "output"
            ],
            "description": "A picture of the input's sound: each column the lowest and highest sample (all channels together) of its part of the first audio track, drawn blue on white. Needs \"input\" (not edits or scale); an input without sound fails the job, saying so.",
            "properties": {
              "width": {
                "type": "integer",
                "minimum": 16,
                "maximum": 16384,
                "default": 1800,
                "description": "Columns (and pairs of peaks)."
              },
              "height": {
                "type": "integer",
                "minimum": 16,
                "maximum": 4096,
                "default": 140
              },
              "output": {
                "type": "string",
                "pattern": "\\.([pP][nN][gG]|[sS][vV][gG])$",
                "description": "The picture: .png or .svg."
              },
              "peaks": {
                "type": "string",
                "pattern": "\\.[jJ][sS][oO][nN]$",
                "description": "The peaks as JSON in audiowaveform's format (version 2, one channel, 16 bits), for peaks.js and wavesurfer.js."
              }
            }
          },
          "report": {
            "$ref": "#/components/schemas/ManifestPath",
            "description": "Where the JSON report goes."
          },
          "overwrite": {
            "type": "boolean",
            "default": false,
            "description": "Outputs (movie, report) that already exist may be replaced. Without it an existing output is an error, as with AVAssetExportSession. An input is never replaced."
          },
          "after": {
            "description": "Jobs this one waits for: ids of the queue (numbers) or unique keys of earlier submissions (strings, the newest job with that key). Each must exist when this job is submitted. The job is queued when every one of them succeeded (or, with afterPolicy \"always\", ended).",
            "type": "array",
            "maxItems": 10000,
            "items": {
              "oneOf": [
                {
                  "type": "integer",
                  "minimum": 1
                },
                {
                  "type": "string",
                  "minLength": 1,
                  "maxLength": 500
                }
              ]
            }
          },
          "afterPolicy": {
            "description": "success (default): a dependency that fails, dies or is cancelled fails this job, naming it; retrying that dependency brings this job back. always: run once every dependency ended, however (clean-up jobs).",
            "enum": [
              "success",
              "always"
            ],
            "default": "success"
          },
          "requires": {
            "description": "Capabilities a host must provide to run this job (coordinator --provides): only such coordinators claim it; it waits for one.",
            "type": "array",
            "maxItems": 64,
            "uniqueItems": true,
            "items": {
              "type": "string",
              "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$"
            }
          },
          "notify": {
            "description": "URLs that receive this job's terminal events (job.succeeded, job.failed, job.dead, job.cancelled) as signed webhooks, besides the farm's own (coordinator --webhook). Each host must be one the farm allows (coordinator --webhook-allow-host), else the submission is refused.",
            "type": "array",
            "maxItems": 16,
            "uniqueItems": true,
            "items": {
              "type": "string",
              "pattern": "^[hH][tT][tT][pP][sS]?://",
              "maxLength": 2000
            }
          },
          "reuse": {
            "type": "boolean",
            "description": "Whether a coordinator may answer this job from the result of an earlier job with the same content (settings, inputs by SHA-256, MediaFarm's and FFmpeg's versions), copying its output checked against the SHA-256 it was published with, and record this job's result for later ones. Default: yes for constant-frame-rate exports, scans and pictures (poster, images, storyboard), no for passthrough exports and inspections. false: always run (and record nothing). See docs/farm.md, Results reused by content."
          }
        }
      },
      "ManifestPath": {
        "type": "string",
        "minLength": 1
      },
      "ManifestPoster": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "output"
        ],
        "properties": {
          "at": {
            "oneOf": [
              {
                "const": "auto"
              },
              {
                "$ref": "#/components/schemas/ManifestTime"
              }
            ],
            "default": "auto",
            "description": "auto: a representative keyframe from the middle third (not black, not a fade, not a blank card; the report lists the frames looked at and their scores). Or a time in seconds."
          },
          "tolerance": {
            "$ref": "#/components/schemas/ManifestTime",
            "description": "With a time: how far from it the picture may be; 0: exact. Default: any (the nearest keyframe)."
          },
          "toleranceBefore": {
            "$ref": "#/components/schemas/ManifestTime"
          },
          "toleranceAfter": {
            "$ref": "#/components/schemas/ManifestTime"
          },
          "maxWidth": {
            "$ref": "#/components/schemas/ManifestPictureSide"
          },
          "maxHeight": {
            "$ref": "#/components/schemas/ManifestPictureSide"
          },
          "format": {
            "$ref": "#/components/schemas/ManifestPictureFormat"
          },
          "quality": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 0.85
          },
          "output": {
            "$ref": "#/components/schemas/ManifestPath"
          }
        }
      },
      "ManifestPictureSide": {
        "type": "integer",
        "minimum": 0,
        "maximum": 16384,
        "default": 0,
        "description": "Pictures fit in this many pixels (0: any), the display aspect kept; never enlarged."
      },
      "ManifestPictureFormat": {
        "enum": [
          "jpeg",
          "png",
          "webp"
        ],
        "default": "jpeg"
      },
      "ManifestSource": {
        "description": "A file (relative paths from the manifest's folder), a library asset as \"asset:ID\" (the host that runs the job resolves it to its own path), or another job's result as \"job:ID#output\" or \"job:KEY#output\" (#report for its report): that job becomes a dependency, and its output's path is put in when this job is due.",
        "oneOf": [
          {
            "type": "string",
            "minLength": 1,
            "not": {
              "pattern": "^asset:"
            }
          },
          {
            "type": "string",
            "pattern": "^asset:[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}[048CGMRWcgmrw]$"
          }
        ]
      },
      "ManifestTime": {
        "description": "Seconds (2.5 or \"2.5\"), a fraction (\"5/2\") or a timecode (\"00:00:02.500\"); exact, never rounded.",
        "oneOf": [
          {
            "type": "number",
            "minimum": 0
          },
          {
            "type": "string",
            "pattern": "^\\s*(\\d+(\\.\\d{0,9})?|\\.\\d{1,9}|\\d+/\\d+|(\\d+:)?\\d{1,2}:\\d{1,2}(\\.\\d{1,9})?)\\s*$"
          }
        ]
      },
      "ManifestRate": {
        "oneOf": [
          {
            "type": "number",
            "exclusiveMinimum": 0
          },
          {
            "type": "string",
            "pattern": "^\\s*(\\d+(\\.\\d{0,9})?|\\.\\d{1,9}|\\d+/\\d+)\\s*$"
          }
        ]
      }
    }
  }
}
"""#
}
