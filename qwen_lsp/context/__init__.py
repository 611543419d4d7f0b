"""What the model sees: one idea per module, plain functions, I/O at the edges.

- frames: terminal output (tracebacks, compiler/linter output) -> Frame list, primary frame
- treesitter: languages, definitions with signatures, imports, identifiers, references
- source: context around one location (enclosing definition, outline, imports, definitions used)
- git_context: uncommitted diff, recent commits touching the lines, blame
- repomap: ranked definition signatures across the workspace within a token budget
- prompt: the prompt assembled from all of the above, byte-stable prefix first
"""
