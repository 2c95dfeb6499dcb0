# python.sh - sourced by the project's bash scripts: sets PY to Debian's python3,
# which has Debian's numpy and scipy (another python3, pyenv's say, may come first
# on PATH and lack them); python3 from PATH where there is no /usr/bin/python3.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
