# Sourced by the benchmark scripts: installs what is missing, builds the release binary, and sets
#   bin    the release mediafarm
#   media  where generated media are kept between runs (MEDIAFARM_BENCH_MEDIA, default /tmp/...)
#   work   a scratch folder removed on exit (named after $1)
#   ff     ffmpeg, quiet and non-interactive
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# What the benchmark prints is kept in bench/results/NAME.txt, replaced by each run.
mkdir -p bench/results
exec > >(tee "bench/results/$1.txt")
script/bootstrap
swift build -c release --product mediafarm >&2
swift build -c release --product mediafarm-engine >&2
bin=$(swift build -c release --show-bin-path)/mediafarm
media=${MEDIAFARM_BENCH_MEDIA:-/tmp/mediafarm-bench-media}
work=$(mktemp -d "/tmp/mediafarm-bench-$1.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$media"
ff() { ffmpeg -nostdin -y -v error "$@"; }
