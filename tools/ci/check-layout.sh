#!/usr/bin/env bash
# The folder rule of src/README.md, checked on the includes: a file under
# src/<folder>/ includes headers of its own folder or of folders below it in
# this order, never above; tools/ and tests/ include no .c file. Exits 1 and
# names each include that breaks it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
order=(runtime columns arrow hash sort catindex attention stream probe)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && echo "$i" && return; done; echo -1; }
bad=0
for f in src/*/*.c src/*/*.h; do
  own=$(basename "$(dirname "$f")")
  r=$(rank "$own")
  if [ "$r" -lt 0 ]; then echo "layout: $f is in a folder src/README.md does not list"; bad=1; continue; fi
  while read -r inc; do
    dir=${inc%%/*}
    [ "$dir" = "$inc" ] && continue          # a bare name: the same folder
    [ "$dir" = tabcl ] && continue           # the public headers
    ir=$(rank "$dir")
    if [ "$ir" -lt 0 ] || [ "$ir" -gt "$r" ]; then
      echo "layout: $f includes \"$inc\": $own/ may not use $dir/ (src/README.md)"; bad=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
if grep -n '#include "[^"]*\.c"' tools/*.c tools/bench/*.c tests/*.c fuzz/*.c 2>/dev/null; then
  echo "layout: a tool or test includes a .c file"; bad=1
fi
[ $bad -eq 0 ] && echo "layout: every include follows src/README.md"
exit $bad
