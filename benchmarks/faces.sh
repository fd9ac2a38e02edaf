#!/usr/bin/env bash
# The faces, timed (issue 17): flake8 against the CLI on one tree with empty caches, flake8's cost with and
# without HTD selected, warm runs alternating between two trees, and a pre-commit run with one staged file.
#
#   benchmarks/faces.sh SGLANG_ROOT VLLM_ROOT [SCRATCH]
#
# Each ROOT is a writable git repository (its project root) holding the package: SGLANG_ROOT/srt and
# VLLM_ROOT/vllm, e.g. copies of the unpacked wheels with `git init` run in them. flake8 and pre-commit must be
# installed in the active environment. The script deletes the trees' .h2dlint_cache/ and stages and unstages
# one file in SGLANG_ROOT. It prints seconds; results vary with the machine's load.
set -u
S=$(realpath "$1"); V=$(realpath "$2"); M=${3:-/tmp/h2dlint-faces-bench}
rm -rf "$M"; mkdir -p "$M"
rm -rf $S/.h2dlint_cache $V/.h2dlint_cache
t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; local e=$(date +%s.%N); python -c "print(f'{$e-$s:.2f}')"; }
echo "== (a) flake8 vs CLI on sglang, empty caches"
FMT='%(path)s	%(row)d	%(col)d	%(code)s	%(text)s'
s=$(date +%s.%N); H2DLINT_CACHE_DIR=$M/c1 flake8 --isolated --select HTD "--format=$FMT" $S/srt > $M/flake8.tsv 2>$M/flake8.err; e=$(date +%s.%N)
echo "flake8 --select HTD (empty cache): $(python -c "print(f'{$e-$s:.2f}')") s, $(wc -l < $M/flake8.tsv) findings, stderr $(wc -c < $M/flake8.err) bytes"
H2DLINT_CACHE_DIR=$M/c2 h2dlint check --output-format json $S/srt > $M/cli.json 2>/dev/null
python - <<PY
import json,os
cli=sorted((e["filename"],e["location"]["row"],e["location"]["column"],e["code"],e["message"]) for e in json.load(open("$M/cli.json")))
fl=[]
for line in open("$M/flake8.tsv"):
    p,r,c,code,text=line.rstrip("\n").split("\t"); fl.append((os.path.abspath(p),int(r),int(c),code,text))
fl.sort()
print(f"CLI findings {len(cli)}, flake8 findings {len(fl)}, identical: {cli==fl}")
PY
echo "== (b) flake8 --select F vs F,HTD on sglang (h2dlint cache empty, then warm)"
rm -rf $M/c3
echo "flake8 --select F:            $(t flake8 --isolated --select F $S/srt) s"
echo "flake8 --select F,HTD (cold): $(H2DLINT_CACHE_DIR=$M/c3 t flake8 --isolated --select F,HTD $S/srt) s"
echo "flake8 --select F,HTD (warm): $(H2DLINT_CACHE_DIR=$M/c3 t flake8 --isolated --select F,HTD $S/srt) s"
echo "flake8 --select F (again):    $(t flake8 --isolated --select F $S/srt) s"
echo "== (c) warm runs: one tree vs alternating sglang/vllm (cache in each project root)"
h2dlint check -q $S/srt > /dev/null 2>&1; h2dlint check -q $V/vllm > /dev/null 2>&1
for i in 1 2 3; do echo "sglang warm: $(t h2dlint check -q $S/srt) s"; done
for i in 1 2 3; do echo "alternate sglang: $(t h2dlint check -q $S/srt) s   vllm: $(t h2dlint check -q $V/vllm) s"; done
echo "shared cache dir (H2DLINT_CACHE_DIR), alternating:"
H2DLINT_CACHE_DIR=$M/c4 h2dlint check -q $S/srt > /dev/null 2>&1; H2DLINT_CACHE_DIR=$M/c4 h2dlint check -q $V/vllm > /dev/null 2>&1
for i in 1 2 3; do echo "alternate sglang: $(H2DLINT_CACHE_DIR=$M/c4 t h2dlint check -q $S/srt) s   vllm: $(H2DLINT_CACHE_DIR=$M/c4 t h2dlint check -q $V/vllm) s"; done
echo "== (d) pre-commit-style: one file of the sglang tree, warm cache"
cd $S
for i in 1 2 3; do echo "h2dlint check srt/managers/scheduler.py: $(t h2dlint check srt/managers/scheduler.py) s"; done
for i in 1 2 3; do echo "h2dlint check --isolated-files srt/managers/scheduler.py: $(t h2dlint check --isolated-files srt/managers/scheduler.py) s"; done
for i in 1 2 3; do echo "python -c pass (interpreter start): $(t python -c pass) s"; done
echo "== (d2) real pre-commit, only srt/managers/scheduler.py staged, warm cache"
cat > .pre-commit-config.yaml <<YAML
repos:
  - repo: local
    hooks:
      - id: h2dlint
        name: h2dlint
        entry: $(which python) -m h2dlint check
        language: system
        types_or: [python, pyi]
        require_serial: true
      - id: noop
        name: noop
        entry: "true"
        language: system
        types_or: [python, pyi]
YAML
echo .pre-commit-config.yaml > .git/info/exclude; echo .h2dlint_cache >> .git/info/exclude
git add srt/managers/scheduler.py
export PRE_COMMIT_HOME=$M/pch
python -m pre_commit run noop > /dev/null 2>&1
for i in 1 2 3; do echo "pre-commit run noop: $(t python -m pre_commit run noop) s   pre-commit run h2dlint: $(t python -m pre_commit run h2dlint) s"; done
git reset -q
