#!/usr/bin/env bash
# Portability lint for the kernels (tools/ci/run-tests.sh calls it): every
# cl/*.cl, with cl/common.cl in front as tabcl__program_source assembles it,
# checked by clang for the spir and spir64 targets with -cl-std=CL1.2 and
# warnings as errors, once per set of build options. A lenient driver (PoCL,
# NVIDIA's compiler) accepts what another may reject; clang's OpenCL front
# end is the one Mesa's rusticl and most GPU drivers start from.
#
#   tools/ci/cl-lint.sh [CACHE_DIR...]
#
# The option sets:
#  - the device options of tabcl__device_build_options (src/runtime/program.c)
#    with fp64 on and off, CPU and GPU, vendor macros off, each program with
#    no extra options (every program must build so: cl-probe does) and,
#    where a program takes a dtype (-DSDPA_DTYPE for sdpa and sdpa_cpu,
#    -DSM_DTYPE for sdpa_gemm, -DMMA_DTYPE as src/attention passes them),
#    with each dtype (f64 only with fp64);
#  - every option string found in the kernel disk caches named as arguments
#    (the test suite's, after it ran), so each tile shape, sort tile and
#    dtype the suite built is linted as built; vendor macros are turned off
#    there too (the NVIDIA-only layer, cl/sdpa_mma.cl, is then empty). The
#    program is told by the extra macros' prefix (CPU_ sdpa_cpu, SDPA_ sdpa,
#    SM_ sdpa_gemm, SORT_ sort, MMA_ sdpa_mma); device options alone apply
#    to every program.
#
# Warnings: clang's defaults plus -Wall -Wextra, without -Wunused-parameter
# (the lookup kernels share one argument list on purpose).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cc=${CL_LINT_CC:-clang}
if ! command -v "$cc" >/dev/null; then
  echo "FAIL: cl-lint needs clang ('$cc' is not installed; tools/setup.sh test installs it)"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

programs=()
for f in cl/*.cl; do
  p=$(basename "$f" .cl)
  [ "$p" = common ] && continue
  programs+=("$p")
  # as tabcl__program_source assembles it: common.cl, a #line, the program
  { cat cl/common.cl; printf '\n#line 1 "%s.cl"\n' "$p"; cat "$f"; } >"$work/$p.cl"
done

sets=$work/sets   # lines: program<TAB>options ("*" for every program)
: >"$sets"
for fp in 0 1; do
  for cpu in 0 1; do
    dev="-cl-std=CL1.2 -DTABCL_HAS_FP64=$fp -DTABCL_VENDOR_NVIDIA=0 -DTABCL_VENDOR_AMD=0"
    dev="$dev -DTABCL_VENDOR_INTEL=0 -DTABCL_IS_CPU=$cpu -DTABCL_MAX_WG=$((cpu ? 4096 : 1024))"
    dev="$dev -DTABCL_LOCAL_MEM=$((cpu ? 2097152 : 49152))"
    printf '*\t%s\n' "$dev" >>"$sets"
    for dt in 0 1 2 3; do
      [ "$dt" = 3 ] && [ "$fp" = 0 ] && continue
      printf 'sdpa\t%s -DSDPA_DTYPE=%d\n' "$dev" "$dt" >>"$sets"
      printf 'sdpa_cpu\t%s -DSDPA_DTYPE=%d\n' "$dev" "$dt" >>"$sets"
      printf 'sdpa_gemm\t%s -DSM_DTYPE=%d\n' "$dev" "$dt" >>"$sets"
      [ "$dt" != 3 ] && printf 'sdpa_mma\t%s -DMMA_DTYPE=%d\n' "$dev" "$dt" >>"$sets"
    done
  done
done
harvested=0
for dir in "$@"; do
  [ -d "$dir" ] || continue
  for f in "$dir"/*.clbin; do
    [ -f "$f" ] || continue
    opts=$(head -c 4096 "$f" | tr -d '\000' | sed -n 's/^options=//p' | head -1)
    [ -n "$opts" ] || continue
    opts=$(printf '%s' "$opts" | sed -E 's/-DTABCL_VENDOR_(NVIDIA|AMD|INTEL)=1/-DTABCL_VENDOR_\1=0/g')
    case " $opts" in
      *" -DCPU_"*) p=sdpa_cpu ;;
      *" -DSDPA_"*) p=sdpa ;;
      *" -DSM_"*) p=sdpa_gemm ;;
      *" -DSORT_"*) p=sort ;;
      *" -DMMA_"*) p=sdpa_mma ;;
      *) p='*' ;;
    esac
    printf '%s\t%s\n' "$p" "$opts" >>"$sets"
    harvested=$((harvested + 1))
  done
done
sort -u "$sets" -o "$sets"

# One line per compile, run as many at once as there are cores.
jobs=$work/jobs   # lines: program<TAB>target<TAB>options
: >"$jobs"
while IFS=$'\t' read -r prog opts; do
  for p in "${programs[@]}"; do
    [ "$prog" = '*' ] || [ "$prog" = "$p" ] || continue
    for target in spir spir64; do printf '%s\t%s\t%s\n' "$p" "$target" "$opts" >>"$jobs"; done
  done
done <"$sets"
n=$(wc -l <"$jobs")
# -fsyntax-only: clang's parser and semantic checks, where its warnings and
# a stricter driver's rejections come from; code generation adds nothing a
# driver's own compiler would not redo, and took four fifths of the time.
lint_one() {
  local p target opts out
  IFS=$'\t' read -r p target opts <<<"$1"
  # shellcheck disable=SC2086
  if ! out=$("$cc" -x cl -target "$target" -Xclang -finclude-default-header -Wall -Wextra \
               -Wno-unused-parameter -Werror $opts -fsyntax-only "$work/$p.cl" 2>&1); then
    echo "FAIL: cl-lint: $p.cl for $target with: $opts"
    printf '%s\n' "$out" | head -20
  fi
}
export -f lint_one
export cc work
tr '\n' '\0' <"$jobs" | xargs -0 -P "$(nproc)" -I{} bash -c 'lint_one "$1"' _ {} >"$work/out" 2>&1
cat "$work/out"
fail=0
{ grep -q '^FAIL' "$work/out" || [ "$(wc -l <"$jobs")" = 0 ]; } && fail=1
echo "cl-lint: $n compiles ($(wc -l <"$sets") option sets, $harvested from disk caches)," \
     "$([ $fail = 0 ] && echo clean || echo FAILED)"
exit $fail
