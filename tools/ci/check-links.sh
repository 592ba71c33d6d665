#!/usr/bin/env bash
# Fails on a relative link of a Markdown file that points at nothing: every
# [text](target) in the repository's .md files (bench/history/ excepted: it
# is a record), target taken relative to the file, any #anchor dropped.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bad=0
while IFS= read -r f; do
  dir=$(dirname "$f")
  while IFS= read -r target; do
    case $target in http://*|https://*|mailto:*|\#*) continue ;; esac
    path=${target%%#*}
    [ -e "$dir/$path" ] || { echo "links: $f: $target does not exist"; bad=1; }
  done < <(grep -o '\]([^)]*)' "$f" | sed 's/^](\(.*\))$/\1/')
done < <({ git ls-files '*.md' 2>/dev/null ||
           find . -name '*.md' -not -path './build*' -not -path './.*' | sed 's#^\./##'; } |
         grep -v '^bench/history/')
exit $bad
