# Shared by the shell tests of this folder: the binaries (CAIRND, CAIRN,
# set by ctest), a scratch dir removed on success, and checks that fail
# the test with a message.
set -euo pipefail
tests_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$tests_dir/../.." && pwd)"
: "${CAIRND:?CAIRND must name the cairnd binary}"
: "${CAIRN:?CAIRN must name the cairn binary}"
export CAIRND CAIRN
cluster="$repo/tools/cairn-cluster"
work="$(mktemp -d "${TMPDIR:-/tmp}/cairn-cluster-test-XXXXXX")"
passed=0
cleanup() {
    # Every node a test started is stopped; the dir stays when it failed.
    [ -f "$work/c/cluster.env" ] && "$cluster" down --dir "$work/c" > /dev/null 2>&1 || true
    if [ "$passed" = 1 ]; then rm -rf "$work"; else echo "kept $work for a look" >&2; fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
contains() { # haystack needle what
    case "$1" in *"$2"*) ;; *) fail "$3: '$2' not in: $1" ;; esac
}
