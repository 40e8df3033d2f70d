# Sourced by scripts/engine (`bootstrap runtime`) and scripts/test (`bootstrap test`): make sure
# .venv holds the project with what the caller needs, installing it on first use.
#
# Why a lock and a staging directory: two first runs at once (./scripts/engine run beside
# ./scripts/test) used to run two pips into one .venv and leave it broken for good. Now one run
# installs while the other waits on .venv.lock; a first install is built in .venv.staging and
# renamed to .venv only when complete, with a stamp naming what it holds, so an interrupted
# install is never taken for a working one. Test tools are added to a complete runtime in place.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The stamp for a need: the need and a checksum of pyproject.toml and the lock (a changed dependency reinstalls).
_bootstrap_stamp() { echo "$1 $(cat "$ROOT/pyproject.toml" "$ROOT/requirements/operator.lock" | cksum | cut -d' ' -f1)"; }

_bootstrap_has() { grep -qxF "$(_bootstrap_stamp "$1")" "$2/.bootstrap-stamp" 2>/dev/null; }

_bootstrap_ready() {
  _bootstrap_has "$1" "$ROOT/.venv" || { [ "$1" = runtime ] && _bootstrap_has test "$ROOT/.venv"; }
}

# pip's own output (what it collects and installs) goes to stderr: an install is never silent. The
# operator's dependencies come from the image's lock first (hash-checked), so the tests run the versions
# the image runs; the project and, for tests, its test tools follow.
_bootstrap_pip() {
  local venv=$1 need=$2 spec="$ROOT"
  [ "$need" = test ] && spec="$ROOT[test]"
  echo "bootstrap: installing the locked dependencies (requirements/operator.lock) into .venv with pip ..." >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check --require-hashes --no-deps \
    -r "$ROOT/requirements/operator.lock" >&2 || return 1
  echo "bootstrap: installing the project ($need) into .venv with pip ..." >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check -e "$spec" >&2
}

# A fresh venv, built aside and renamed into place: .venv is either absent or complete.
_bootstrap_fresh() {
  local need=$1 staging="$ROOT/.venv.staging" old
  rm -rf "$staging"
  echo "bootstrap: creating a virtualenv (first run only) ..." >&2
  python3 -m venv "$staging" || return 1
  "$staging/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip >&2 || return 1
  _bootstrap_pip "$staging" "$need" || return 1
  _bootstrap_stamp "$need" >"$staging/.bootstrap-stamp"
  # Scripts name their interpreter by absolute path: point them at the final place before the move.
  grep -rlIF "$staging" "$staging/bin" | while read -r file; do
    sed -i "s|$staging|$ROOT/.venv|g" "$file"
  done
  if [ -e "$ROOT/.venv" ]; then
    old="$ROOT/.venv.broken.$$"
    mv "$ROOT/.venv" "$old" && mv "$staging" "$ROOT/.venv" || return 1
    rm -rf "$old"
  else
    mv "$staging" "$ROOT/.venv" || return 1
  fi
}

bootstrap() {
  local need=${1:-runtime}
  _bootstrap_ready "$need" && return 0
  exec 8>"$ROOT/.venv.lock"
  if ! flock -n 8; then
    echo "bootstrap: another run is installing into .venv; waiting for it ..." >&2
    flock 8
  fi
  if ! _bootstrap_ready "$need"; then
    # A venv made elsewhere (CI's own pip, an older bootstrap) is completed in place; a broken
    # or missing one is built afresh.
    if ! { [ -x "$ROOT/.venv/bin/python" ] && _bootstrap_pip "$ROOT/.venv" "$need" \
          && _bootstrap_stamp "$need" >>"$ROOT/.venv/.bootstrap-stamp"; }; then
      _bootstrap_fresh "$need" || { flock -u 8; echo "bootstrap: installing into .venv failed" >&2; exit 1; }
    fi
    echo "bootstrap: .venv is ready" >&2
  fi
  flock -u 8
  exec 8>&-
}
