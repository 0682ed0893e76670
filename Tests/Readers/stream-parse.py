#!/usr/bin/python3
# Reads a streaming package with PyPI's parsers, m3u8 (HLS) and mpegdash (DASH), and prints what they
# read, as JSON: the master playlist's variants, I-frame variants and renditions, each media playlist's
# target duration and segments, and the MPD's adaptation sets and segment timelines; or {"error": ...}.
#   stream-parse.py PACKAGE_FOLDER
# script/bootstrap installs both parsers into .build/stream-readers.
import json, os, sys
from xml.etree import ElementTree

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".build", "stream-readers")
sys.path.insert(0, root)
import m3u8  # noqa: E402
from mpegdash.parser import MPEGDASHParser  # noqa: E402


def media(folder, uri):
    playlist = m3u8.load(os.path.join(folder, uri))
    return {"uri": uri, "targetDuration": playlist.target_duration, "version": playlist.version,
            "playlistType": playlist.playlist_type, "independent": playlist.is_independent_segments, "endList": playlist.is_endlist,
            "iFramesOnly": playlist.is_i_frames_only, "keys": [{"method": k.method, "uri": k.uri, "iv": k.iv} for k in playlist.keys if k], "map": [s.init_section.uri if s.init_section else None for s in playlist.segments][:1],
            "segments": [{"uri": s.uri, "duration": s.duration, "byterange": s.byterange} for s in playlist.segments],
            "mapByterange": [s.init_section.byterange if s.init_section else None for s in playlist.segments][:1]}


def hls(folder):
    master = m3u8.load(os.path.join(folder, "master.m3u8"))
    variants = []
    for p in master.playlists:
        i = p.stream_info
        variants.append({"bandwidth": i.bandwidth, "averageBandwidth": i.average_bandwidth, "codecs": i.codecs,
                         "resolution": list(i.resolution) if i.resolution else None, "frameRate": i.frame_rate, "audio": i.audio,
                         "playlist": media(folder, p.uri)})
    iframes = []
    for p in master.iframe_playlists:
        i = p.iframe_stream_info
        iframes.append({"bandwidth": i.bandwidth, "averageBandwidth": i.average_bandwidth, "codecs": i.codecs,
                        "resolution": list(i.resolution) if i.resolution else None, "playlist": media(folder, p.uri)})
    renditions = [{"type": m.type, "groupId": m.group_id, "language": m.language, "name": m.name, "default": m.default,
                   "playlist": media(folder, m.uri)} for m in master.media]
    return {"independent": master.is_independent_segments, "variants": variants, "iframes": iframes, "renditions": renditions}


def dash(folder):
    path = os.path.join(folder, "manifest.mpd")
    mpd = MPEGDASHParser.parse(path)
    # segmentAlignment as written: mpegdash reads the attribute with bool(), which takes "false" for true.
    namespace = "{urn:mpeg:dash:schema:mpd:2011}"
    written = [a.get("segmentAlignment") for a in ElementTree.parse(path).getroot().iter(namespace + "AdaptationSet")]
    sets = []
    for period in mpd.periods:
        for a in period.adaptation_sets:
            representations = []
            for r in a.representations:
                if r.segment_lists:
                    # A single file's byte ranges: its BaseURL, the initialization's range and each segment's.
                    l = r.segment_lists[0]
                    timeline = [{"t": s.t, "d": s.d, "r": s.r} for s in l.segment_timelines[0].Ss]
                    representations.append({"id": r.id, "bandwidth": r.bandwidth, "codecs": r.codecs, "width": r.width, "height": r.height,
                                            "timescale": l.timescale, "presentationTimeOffset": l.presentation_time_offset,
                                            "baseURL": [b.base_url_value for b in (r.base_urls or [])],
                                            "initializationRange": l.initializations[0].range if l.initializations else None,
                                            "mediaRanges": [u.media_range for u in (l.segment_urls or [])], "timeline": timeline})
                    continue
                if not r.segment_templates:
                    # A sidecar file (WebVTT): its BaseURL.
                    representations.append({"id": r.id, "bandwidth": r.bandwidth, "baseURL": [b.base_url_value for b in (r.base_urls or [])]})
                    continue
                t = r.segment_templates[0]
                timeline = [{"t": s.t, "d": s.d, "r": s.r} for s in t.segment_timelines[0].Ss]
                representations.append({"id": r.id, "bandwidth": r.bandwidth, "codecs": r.codecs, "width": r.width, "height": r.height,
                                        "timescale": t.timescale, "presentationTimeOffset": t.presentation_time_offset,
                                        "initialization": t.initialization, "media": t.media, "startNumber": t.start_number,
                                        "timeline": timeline})
            alignment = written[len(sets)] if len(sets) < len(written) else None
            sets.append({"contentType": a.content_type, "lang": a.lang, "segmentAlignment": alignment == "true",
                         "representations": representations})
    return {"type": mpd.type, "duration": mpd.media_presentation_duration, "adaptationSets": sets}


def main():
    folder = sys.argv[1]
    out = {}
    try:
        if os.path.exists(os.path.join(folder, "master.m3u8")):
            out["hls"] = hls(folder)
        if os.path.exists(os.path.join(folder, "manifest.mpd")):
            out["dash"] = dash(folder)
    except Exception as e:  # what the parsers could not read is the finding
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(out))


main()
