"""h2dlint: find per-step host-to-device copies that stall the GPU pipeline.

How it is built (for contributors; README.md is for users). One core, shared by every face, in layers whose
imports only point down (`lint-imports` checks the contract in pyproject.toml; tests/test_layers.py runs it):

    facts/     one file's facts: reading and decoding (sources), the syntax gate, positions, names and
               scopes (which names are torch), constructs and arguments, class attributes, one-time guards,
               receiver types, registrations (custom ops, compile, caches), markers, noqa comments, settings,
               and the plain summary and heat records the walk produces
    rules/     one module per rule: a `Rule` class with its documentation and its own VALID/INVALID
               examples (which are its tests); the rewrite every fix shares and the helper import
    checker/   the single `ast` walk per file (walk: frames and regions; collector: what it records),
               calls between functions (call_graph), what runs under CUDA-graph capture (capture), and
               `analyzer`: source text in, the file's summary out
    project/   a run over many files: which files (files), `[tool.h2dlint]` (config), the cache, module
               names and the project index, hotness propagated across files (hotness), findings
               (`check_source`) and the run itself
    fixing/    applying fixes to text and, atomically, to files; `--diff`; `--add-noqa` (baseline)
    faces/     the command line, `explain`, output formats and SARIF, the terminal, the flake8 plugin, the
               libcst codemod, and the rule pages generated into the repository (rule_docs)

`h2dlint/runtime.py` stands alone: fixed code imports `h2dlint.runtime` (or a vendored copy), never the
linter, and the linter never imports torch. `h2dlint/codemod.py` keeps the documented name
`h2dlint.codemod.FixHostToDeviceCopies`.

Analysis uses only the standard library's `ast` (about ten times faster to parse than libcst); fixes are
text edits (ruff's model) checked by compiling the result, and libcst is used only by the codemod face.
Hotness is decided for all rules in one place; a rule only recognises a construct. Adding a rule: a `Rule`
subclass in `h2dlint/rules/` with its documentation fields and examples, one entry in `ALL_RULES`, and
`python -m h2dlint.faces.rule_docs` to regenerate h2dlint/rules/README.md and the README's table.

One-file faces (the flake8 plugin) call `h2dlint.project.findings.check_source_in_project(text, path,
settings)`: when the last `h2dlint check` with the same settings cached a project index covering `path`, the
file's functions take the heat found across the project (functions the file itself makes cold stay cold);
otherwise it is exactly `check_source`, reasoning about the file alone.
"""

__version__ = "0.1.0"
