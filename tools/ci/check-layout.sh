#!/usr/bin/env bash
# The folder rule of src/README.md, checked on the includes: a file under
# src/<folder>/ includes headers of its own folder or of folders below it in
# this order, never above; tools/ and tests/ include no .c file; a tool
# includes only the public headers, the tools' interface
# (include/tabcl/tabcl_tools.h), its own folder's headers and system
# headers, never a file under src/. Exits 1 and names each include that
# breaks it.
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
# Tools: "tabcl/<header>" of include/tabcl/ (the public headers and
# tabcl_tools.h), a bare name of the tool's own folder (cl-probe.h,
# bench.h), or <system>; nothing else, so nothing under src/.
for f in tools/*.c tools/*.h tools/bench/*.c tools/bench/*.h; do
  [ -e "$f" ] || continue
  own=$(dirname "$f")
  while read -r inc; do
    case "$inc" in
      tabcl/*/*) ;;                                        # no deeper folders there
      tabcl/*) [ -f "include/$inc" ] && continue ;;
      */*) ;;
      *) [ -f "$own/$inc" ] && continue ;;
    esac
    echo "layout: $f includes \"$inc\": a tool includes the public headers, include/tabcl/tabcl_tools.h and its own folder's headers only (src/README.md, Conventions)"
    bad=1
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  while read -r inc; do      # <...> is a system header, unless it names a file of src/
    [ -f "src/$inc" ] || continue
    echo "layout: $f includes <$inc>, a file under src/: a tool includes the public headers, include/tabcl/tabcl_tools.h and its own folder's headers only (src/README.md, Conventions)"
    bad=1
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/\1/p' "$f")
done
if grep -n '#include "[^"]*\.c"' tools/*.c tools/bench/*.c tests/*.c fuzz/*.c 2>/dev/null; then
  echo "layout: a tool or test includes a .c file"; bad=1
fi
[ $bad -eq 0 ] && echo "layout: every include follows src/README.md"
exit $bad
