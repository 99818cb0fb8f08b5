#!/bin/sh
# run.sh: run tests/terraform/check_terraform.py under .venv-iac (scripts/iac-venv).
# usage: run.sh ROOT [--expect STATUS TEXT] [check_terraform.py arguments...]
#        run.sh ROOT --unittest   (the checker's own parts: test_checker_parts.py)
# Without .venv-iac: exit 77 (ctest shows the test as skipped), or a failure when CI is set.
# --expect: the checker must exit with STATUS and print TEXT (the negative fixtures).
root=$1
shift
py=$root/.venv-iac/bin/python
if [ ! -x "$py" ]; then
    if [ -n "${CI:-}" ]; then
        echo "run.sh: $root/.venv-iac is missing (run scripts/iac-venv)"
        exit 1
    fi
    echo "run.sh: $root/.venv-iac is missing: run scripts/iac-venv (skipped)"
    exit 77
fi
PATH=$root/.venv-iac/bin:$PATH
export PATH
if [ "${1:-}" = "--unittest" ]; then
    exec "$py" "$root/tests/terraform/test_checker_parts.py"
fi
if [ "${1:-}" = "--expect" ]; then
    want=$2 text=$3
    shift 3
    out=$("$py" "$root/tests/terraform/check_terraform.py" --root "$root" "$@" 2>&1)
    got=$?
    echo "$out"
    [ "$got" -eq "$want" ] || { echo "run.sh: expected exit $want, got $got"; exit 1; }
    case $out in
    *"$text"*) exit 0 ;;
    *) echo "run.sh: expected output containing: $text"; exit 1 ;;
    esac
fi
exec "$py" "$root/tests/terraform/check_terraform.py" --root "$root" "$@"
