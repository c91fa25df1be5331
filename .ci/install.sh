# Sourced by .ci/run and .ci/release: `install PYTHON REQUIREMENT...` installs
# into PYTHON's environment, quietly, by uv where it is on PATH, else by pip.
#
# uv installs the same packages from the same places as pip: its find-links,
# indexes and constraints, read from pip's configuration (uv reads no
# pip.conf), with pip's choice among indexes (uv's unsafe-best-match), and
# compiles them to bytecode as pip does (this machine sets
# PYTHONDONTWRITEBYTECODE: without .pyc files every process compiles what it
# imports; importing TensorFlow, JAX, PyTorch and Keras took 12 s against 5 s).
# CI's main environment on 2 cores, both from empty caches (2026-12-07, issue
# 59): 23 s against 77 s by pip, the same 142 packages at the same versions.

uv_sources=(--index-strategy unsafe-best-match)
while IFS= read -r line; do
  value=${line#*=}
  value=${value//\'/}
  for item in $value; do
    case ${line%%=*} in
      *.find-links) uv_sources+=(--find-links "$item") ;;
      *.extra-index-url) uv_sources+=(--extra-index-url "$item") ;;
      *.index-url) uv_sources+=(--index-url "$item") ;;
      *.constraint) uv_sources+=(--constraint "$item") ;;
    esac
  done
done < <(python3 -m pip config list 2>/dev/null)

install() {
  local python=$1
  shift
  if command -v uv >/dev/null; then
    uv pip install -q --compile-bytecode --python "$python" "${uv_sources[@]}" "$@"
  else
    "$python" -m pip install -q "$@"
  fi
}
