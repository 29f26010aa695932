#!/usr/bin/env bash
# Checks that every C file git tracks is formatted as .clang-format says (clang-format 14,
# Debian 12's). Prints the files that differ and exits 1; `--fix` rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = --fix ] && fix=1
bad=()
while IFS= read -r f; do
	if [ "$fix" = 1 ]; then
		clang-format -i "$f"
	elif ! clang-format "$f" | cmp -s - "$f"; then
		bad+=("$f")
	fi
done < <(git ls-files '*.c' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
	echo "check-format: these files differ from .clang-format (tools/check-format.sh --fix):" >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi
