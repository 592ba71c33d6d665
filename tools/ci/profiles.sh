#!/usr/bin/env bash
# Every test binary once per device profile (docs/profiles.md),
# with TABCL_DEVICE_PROFILE set, on the default device (PoCL in CI).
#
# Each profile changes the kernels' build options (work-group and local
# memory limits, fp64), so every profile compiles its programs afresh: the
# whole suite under all seven profiles takes over an hour on two cores, far
# past CI's budget. So each binary runs a reduced set, chosen to reach each
# family of kernels and planners (hash, sort, lookup and align, uploads,
# attention in every dtype, slicing, failure paths, threads) with few
# distinct kernel builds. The sets are the FILTERS table below, one
# Criterion --filter per binary; a binary the table does not name fails the
# step, so a new test file must be given its set here. test_profile itself
# (which loops over every profile) runs whole in ctest. The disk cache is
# the suite's, so amd-cdna reuses what amd-rdna3 built (the same options).
# Attention runs at head dims 16 and 64 only (three builds a profile): every
# other attention build is a cold compile of seconds per profile. The soak
# (which builds every dtype) is represented by its probe-kernel test.
#
# With TABCL_PROFILE_FULL=1 every binary runs whole under each profile
# instead (the run docs/profiles.md quotes; not a CI step).
#
# usage: tools/ci/profiles.sh BUILD LOGDIR [PROFILE...]   (default: every profile)
set -uo pipefail
build=${1:?usage: profiles.sh BUILD LOGDIR [PROFILE...]}
logs=${2:?usage: profiles.sh BUILD LOGDIR [PROFILE...]}
shift 2
mkdir -p "$logs"
build=$(cd "$build" && pwd) logs=$(cd "$logs" && pwd)
export TABCL_CACHE_DIR=${TABCL_CACHE_DIR:-$build/test-cache}
export TABCL_TEST_SOURCE_DIR=${TABCL_TEST_SOURCE_DIR:-$PWD}

declare -A FILTERS=(
  [test_app_context]='app_context/@(plays_the_application|bad_arguments_are_refused)'
  [test_arrow]='arrow/lookup_and_align_on_the_device'
  [test_bad_input]='*'
  [test_cache_trust]='cache_trust/@(entry_writable_by_group_or_others|new_folders_and_entries_are_private)'
  [test_catindex]='catindex/@(random_vocabularies_both_orders|label_lengths_0_to_70000|sliced_launches_give_the_same_codes|collision_separated_by_a_higher_seed|nulls_are_never_matched|align_maps_dictionary_codes)'
  [test_catindex_data]='*'
  [test_catindex_errors]='catindex_errors/*'
  [test_catindex_io]='catindex_io/*'
  [test_failure_sweep]='sweep/@(context_create_cl|context_create_app_cl|lookup_cl)'
  [test_half]='half/edges'
  [test_kernel_warnings]='kernel_warnings/each_program_plain_and_with_each_dtype'
  [test_hash]='hash_device/@(mid_and_big_kernels|huge_among_short|sliced_equals_unsliced)'
  [test_plan]='*'
  [test_programs]='*'
  [test_profile]='profile/@(context_description_clamped|option_beats_environment)'
  [test_runtime]='runtime/@(default_device_runs_probe|slicing_planner_respects_limits|zero_size_buffer_is_allowed)'
  [test_sdpa]='sdpa/@(masks_and_broadcasts|grouped_query_heads|rows_with_nothing_to_attend_are_zero|empty_calls_write_nothing)'
  [test_soak]='oclgrind_probe/*'
  [test_sort]='sort/@(random_sizes_against_qsort|distributions|selfcheck|tiny_tiles_take_global_passes)'
  [test_stream]='stream/@(bad_input|convenience_calls_equal_serial)'
  [test_strings]='strings/*'
  [test_threads]='threads/selfchecks_concurrently'
  [test_upload]='upload/*'
)

if [ "${TABCL_PROFILE_FULL:-0}" = 1 ]; then
  for name in "${!FILTERS[@]}"; do FILTERS[$name]='*'; done
fi

if [ $# -gt 0 ]; then profiles=("$@")
else mapfile -t profiles < <("$build/tools/cl-probe" --list-profiles); fi
[ ${#profiles[@]} -gt 0 ] || { echo "FAIL: no device profiles listed"; exit 1; }

fail=0
start=$SECONDS
for bin in "$build"/tests/test_*; do
  name=$(basename "$bin")
  [ -n "${FILTERS[$name]+x}" ] || { echo "FAIL: $name has no set in tools/ci/profiles.sh"; fail=1; }
done
# One profile's binaries, one after another; what it prints goes to its own
# summary, shown whole once it is done.
run_profile() {
  local p=$1 t0=$SECONDS bad=0 bin name log rc tested
  # a working folder of its own: tests write files under fixed names there
  mkdir -p "$logs/work-$p" && cd "$logs/work-$p" || return 1
  for bin in "$build"/tests/test_*; do
    name=$(basename "$bin")
    [ -n "${FILTERS[$name]+x}" ] || continue
    log=$logs/profile-$p-$name.log
    # test_plan needs no device: it runs with no OpenCL platform, as in ctest
    if [ "$name" = test_plan ]; then
      env OCL_ICD_VENDORS="$build/no-icd" OCL_ICD_FILENAMES= TABCL_DEVICE_PROFILE="$p" \
        "$bin" --jobs=1 --filter "${FILTERS[$name]}" >"$log" 2>&1
    else
      TABCL_DEVICE_PROFILE="$p" "$bin" --jobs=1 --filter "${FILTERS[$name]}" >"$log" 2>&1
    fi
    rc=$?
    tested=$(sed -n 's/.*Synthesis: Tested: \([0-9]*\).*/\1/p' "$log")
    if [ $rc -ne 0 ] || [ -z "$tested" ] || [ "$tested" = 0 ]; then
      echo "FAIL: $name under profile $p (rc $rc, ${tested:-no} tests run; $log)"
      grep -E "Assertion|FAIL|CRASH|Tested" "$log" | head -20
      bad=1
    fi
  done
  echo "profile $p: done in $((SECONDS - t0)) s"
  return $bad
}

# Profiles run side by side, as many at once as there are cores: each is
# one compiler and one test process at a time, so two cores finish the seven
# in about half the time of one after another. The disk cache takes
# concurrent writers (entries are renamed into place).
width=${TABCL_PROFILE_JOBS:-$(nproc)}
for p in "${profiles[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$width" ]; do wait -n || true; done
  # (the status goes to a file: wait -n above may have collected it)
  { run_profile "$p"; echo $? >"$logs/profile-$p.rc"; } >"$logs/profile-$p.summary" 2>&1 &
done
wait
for p in "${profiles[@]}"; do
  cat "$logs/profile-$p.summary"
  [ "$(cat "$logs/profile-$p.rc" 2>/dev/null)" = 0 ] || fail=1
done
echo "profiles: ${#profiles[@]} profiles in $((SECONDS - start)) s"
exit $fail
