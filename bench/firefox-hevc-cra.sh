#!/usr/bin/env bash
# Firefox and HEVC in Matroska: the minimal file behind the one cell of bench/readers.py that is not
# exact (a smart-cut HEVC mkv: Firefox shows 100 of 135 frames), made with FFmpeg and x265 alone, no
# MediaFarm in it.
#
# An open-GOP HEVC stream (x265's default) has one IDR picture, its first; every later keyframe is a
# CRA picture, which H.265 makes an intra random access point like the IDR: a decoder may start at it,
# dropping the leading pictures that precede it in output order. The file here is such a stream cut at its second
# keyframe with `-c copy`: 25 pictures starting with a CRA, every block of a keyframe flagged as one.
# The same packets go into mkv and mp4.
#
# Firefox's Matroska demuxer decides keyframes by reading the picture, not the block's flag, and
# counts only IDR pictures (H265::IsKeyFrame); a decoder it creates (at the start, and again at every
# change of the stream's parameter sets) waits for a keyframe. So the mkv below plays nothing in
# Firefox, while its mp4 (whose sync-sample table it believes) plays all 25 pictures, and FFmpeg and
# GStreamer decode every picture of both. A smart cut into mkv meets it where a re-encoded stretch
# (an IDR, with the encoder's parameter sets) is followed by copied pictures starting at a CRA (with
# the source's parameter sets, in the picture): Firefox makes a new decoder there and drops pictures
# up to the next IDR, the next re-encoded stretch. MediaFarm's file is right by the specification and
# in the four other readers; mp4 or mov avoid it in Firefox.
#   bench/firefox-hevc-cra.sh      prints each reader's count of pictures for both files
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/mediafarm-bench-firefox-hevc.XXXXXX)
trap 'rm -rf "$work"' EXIT
ff() { ffmpeg -nostdin -y -v error "$@"; }

ff -f lavfi -i testsrc2=s=160x120:r=25:d=2 -c:v libx265 -preset ultrafast -pix_fmt yuv420p \
  -x265-params "keyint=25:min-keyint=25:scenecut=0:open-gop=1:bframes=3:repeat-headers=1:log-level=error" "$work/open-gop.mp4"
ff -ss 1.0 -i "$work/open-gop.mp4" -c copy "$work/cra.mp4"
ff -i "$work/cra.mp4" -c copy "$work/cra.mkv"

first=$(ffmpeg -v trace -i "$work/cra.mkv" -map 0:v -c copy -bsf:v trace_headers -f null - 2>&1 \
  | grep -m1 -E "nal_unit_type .* = (1[6-9]|2[01])$" | awk '{print $NF}')
echo "first picture's NAL unit type: $first (21: CRA, 19/20: IDR)"
for f in cra.mkv cra.mp4; do
  frames=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$work/$f")
  gst=$(gst-launch-1.0 -q filesrc location="$work/$f" ! decodebin ! videoconvert ! video/x-raw,format=I420 ! fdsink fd=1 sync=false \
    | wc -c)
  firefox=$(/usr/bin/python3 Tests/Readers/firefox-play.py "$work/$f" --rate 0.5 | tail -1 \
    | /usr/bin/python3 -c 'import json, sys; j = json.load(sys.stdin); print(j.get("decoded", j))')
  echo "$f: FFmpeg $frames pictures, GStreamer $((gst / (160 * 120 * 3 / 2))), Firefox $firefox (getVideoPlaybackQuality)"
done
