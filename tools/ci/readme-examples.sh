#!/usr/bin/env bash
# Compiles every C example of README.md against a build, so that an example
# that stops compiling fails the test command.
#
#   tools/ci/readme-examples.sh [BUILD]     (BUILD: the build folder, ./build)
#
# An example is a fenced block whose info string starts with "c example":
#   ```c example        a function body: it is compiled inside
#                       static int readme_example(tabcl_context *ctx,
#                                                 tabcl_category_index *idx)
#                       with <stdio.h>, <stdlib.h>, <string.h>, <stdint.h> and
#                       <tabcl/tabcl.h> included; its own #include lines move
#                       to the top of the file;
#   ```c example-file   a whole file: compiled as it is, with an empty main
#                       added when it has none. One that has a main is also
#                       run, on the default device, and must exit 0.
# "requires=NAME" after either skips the block (saying so) while no public
# header declares NAME, for an example written ahead of its call.
# Each is compiled with -std=c11 -Wall -Wextra -Werror against include/ and
# BUILD/libtabcl.a, linked as an outside program links the static library.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
build=${1:-build}
lib=$build/libtabcl.a
[ -f "$lib" ] || { echo "readme-examples: no $lib (build the library first)" >&2; exit 1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" 2>/dev/null; }
libs="-lOpenCL -lpthread -lm"
case "$(cache TABCL_WITH_CLBLAST | tr a-z A-Z)" in ON|1|TRUE|YES) libs="-lclblast $libs" ;; esac
san=$(cache TABCL_SANITIZE)
flags="-std=c11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-unused-variable
       -Wno-unused-function -Wno-unused-but-set-variable -I$root/include"
[ -n "$san" ] && flags="$flags -fsanitize=$san"
cc=${CC:-cc}
work=$(mktemp -d "${TMPDIR:-/tmp}/tabcl-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Split README.md into one file per example: NN.kind, with its info string
# in NN.info.
awk -v dir="$work" '
  /^```c example/ { n++; f = sprintf("%s/%02d", dir, n); kind = ($2 == "example-file") ? "file" : "body"
                    print kind " " $0 > (f ".info"); close(f ".info"); out = f "." kind; on = 1
                    printf "" > out; next }
  on && /^```/   { on = 0; close(out); next }
  on             { print > out }' README.md

fail=0 count=0 skipped=0
for info in "$work"/*.info; do
  [ -e "$info" ] || break
  n=$(basename "$info" .info)
  read -r kind rest <"$info"
  need=$(sed -n 's/.*requires=\([A-Za-z0-9_]*\).*/\1/p' "$info")
  if [ -n "$need" ] && ! grep -qw "$need" include/tabcl/*.h; then
    echo "readme example $n: skipped ($need is not in include/tabcl yet)"; skipped=$((skipped + 1)); continue
  fi
  src=$work/$n.c
  if [ "$kind" = file ]; then
    cp "$work/$n.file" "$src"
    grep -q '^int main(' "$src" || echo 'int main(void) { return 0; }' >>"$src"
  else
    { echo '#include <stdint.h>'; echo '#include <stdio.h>'; echo '#include <stdlib.h>'
      echo '#include <string.h>'; echo '#include <tabcl/tabcl.h>'
      grep '^#include' "$work/$n.body"
      echo 'static int readme_example(tabcl_context *ctx, tabcl_category_index *idx) {'
      grep -v '^#include' "$work/$n.body"
      echo '  return 0;'; echo '}'
      echo 'int main(void) { (void)readme_example; return 0; }'; } >"$src"
  fi
  count=$((count + 1))
  # shellcheck disable=SC2086
  if ! $cc $flags "$src" "$lib" $libs -o "$work/$n" 2>"$work/$n.log"; then
    echo "FAIL: readme example $n ($(head -c 60 "$info" | cut -d' ' -f2-)) does not compile:"
    sed 's/^/  /' "$work/$n.log"; cat -n "$src" | sed 's/^/  /'; fail=1; continue
  fi
  if [ "$kind" = file ] && grep -q '^int main(' "$work/$n.file"; then
    if ! (cd "$work" && "./$n") >"$work/$n.out" 2>&1; then
      echo "FAIL: readme example $n exits non-zero:"; sed 's/^/  /' "$work/$n.out"; fail=1; continue
    fi
  fi
done
echo "readme examples: $count compiled, $skipped skipped, $([ $fail = 0 ] && echo all passed || echo some failed)"
[ "$count" -gt 0 ] || { echo "FAIL: no C example found in README.md"; fail=1; }
exit $fail
