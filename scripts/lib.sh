# Shared helpers for the scripts in this directory. Source it; do not run it.
# shellcheck shell=bash

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPT=$(realpath "$0")  # before any cd: usage() reads it
BUILD_DIR=${BUILD_DIR:-$REPO/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# True when $1 is a configured meson build directory.
is_configured() { [[ -f "$1/meson-private/coredata.dat" && -f "$1/build.ninja" ]]; }

# A python3 that can import the given modules (default: pytest). PYTHON
# overrides. pyenv/venv interpreters earlier on PATH often lack Debian's
# python3-pytest / python3-mpi4py, so the distribution interpreter is tried too.
find_python() {
    local mods=${1:-pytest} cand
    for cand in ${PYTHON:-} python3 /usr/bin/python3; do
        [[ -n $cand ]] || continue
        command -v "$cand" >/dev/null 2>&1 || continue
        if "$cand" -c "import ${mods}" >/dev/null 2>&1; then
            command -v "$cand"
            return 0
        fi
    done
    return 1
}

# ompi_info --path <kind> --parsable -> the directory
ompi_path() {
    ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p" | head -n1
}

# Installed locations of the mca_*.so plugins a build dir installs (one a line).
installed_components() {
    local py
    py=$(find_python json) || die "python3 not found"
    meson introspect "$1" --installed | "$py" -c '
import json, os, sys
for src, dst in sorted(json.load(sys.stdin).items()):
    name = os.path.basename(dst)
    if name.startswith("mca_") and name.endswith(".so"):
        print(dst)'
}

# Unique directories (colon-separated) holding the given files.
dirs_of() {
    local f d out=""
    for f in "$@"; do
        d=$(dirname "$f")
        case ":$out:" in *":$d:"*) ;; *) out=${out:+$out:}$d ;; esac
    done
    printf '%s\n' "$out"
}

# Print the comment block at the top of the calling script (its usage text).
usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$SCRIPT"
}
