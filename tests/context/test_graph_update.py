"""The reference graph of a live index after an edit inside bodies (ranking.update_graph): the
changed files' rows replaced where they were, the same arrays a whole rebuild gives."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from qwen_lsp.context.ranking import _file_rows, build_graph, update_graph
from qwen_lsp.context.repomap import FileTags, index_from
from qwen_lsp.context.treesitter import Definition


def _tags(defines: list[str], refs: dict[str, int]) -> FileTags:
    return FileTags([Definition(n, "function", i + 1, i + 1, f"def {n}()", 0) for i, n in enumerate(defines)], Counter(refs))


def test_updating_the_changed_files_rows_gives_the_rebuilt_graph() -> None:
    names = [f"name_{k}" for k in range(12)]
    files = {f"m{i:02d}.py": _tags(names[i % 12 : i % 12 + 1], {names[(i * 5 + j) % 12]: 1 + j for j in range(4)})
             for i in range(30)}
    graph = build_graph(index_from(dict(files)))
    assert np.all(np.diff(graph.src) >= 0)  # rows sorted by referrer: what the update relies on
    # Same names referenced and defined (the shape), other counts: the first, a middle and the last file.
    changed = ["m00.py", "m13.py", "m29.py"]
    edited = dict(files)
    for rel in changed:
        old = files[rel]
        edited[rel] = _tags([d.name for d in old.defs], {name: 7 * n for name, n in old.refs.items()})
    index = index_from(edited)
    updated, rebuilt = update_graph(graph, index, changed), build_graph(index)
    for column in ("src", "dst", "name", "weight"):
        assert np.array_equal(getattr(updated, column), getattr(rebuilt, column)), column
    assert not np.array_equal(updated.weight, graph.weight)
    # A file "changed" without any change: the same rows.
    assert np.array_equal(update_graph(graph, index_from(dict(files)), ["m05.py"]).src, graph.src)


def test_the_whole_graph_has_the_rows_each_file_makes_on_its_own() -> None:
    # Names with several definers (a file among them referencing its own), a file without
    # references, a name nobody defines, counts that differ: build_graph's rows, all made at once,
    # are those _file_rows makes file by file (what update_graph splices in), in the same order,
    # with the same weights.
    names = [f"name_{k}" for k in range(9)]
    files = {f"m{i:02d}.py": _tags(names[i % 9 : i % 9 + 1] + names[(i * 2) % 9 : (i * 2) % 9 + 1],
                                   {names[(i * 7 + j) % 9]: 1 + (i + j) % 5 for j in range(i % 4)} | {"nowhere": 2})
             for i in range(25)}
    files["empty.py"] = _tags(["lonely"], {})
    graph = build_graph(index_from(files))
    rows = [_file_rows(graph, u, files[rel]) for u, rel in enumerate(graph.files)]
    for k, column in enumerate(("src", "dst", "name", "weight")):
        whole, by_file = getattr(graph, column), np.concatenate([r[k] for r in rows])
        assert whole.dtype == by_file.dtype and whole.tobytes() == by_file.tobytes(), column
    assert len(graph.src) and not np.any(graph.src == graph.dst)  # no edge from a file to itself
    assert build_graph(index_from({})).src.size == 0


def test_a_rows_weight_is_the_names_idf_share_times_the_root_of_the_count() -> None:
    # An oracle for the arithmetic both build_graph and update_graph use: b.py calls `compute`
    # (defined in a.py and c.py) 4 times; three of the four files reference it.
    files = {"a.py": _tags(["compute"], {}), "b.py": _tags(["helper"], {"compute": 4}),
             "c.py": _tags(["compute"], {"compute": 1}), "d.py": _tags(["other"], {"compute": 9, "helper": 1})}
    graph = build_graph(index_from(files))
    a, b, c, d = (graph.file_pos[f] for f in ("a.py", "b.py", "c.py", "d.py"))
    idf_share = math.log((4 + 1) / 3) / 2  # log((files + 1) / referrers) / definers
    rows = {(int(s), int(t), graph.names[int(n)]): float(w)
            for s, t, n, w in zip(graph.src, graph.dst, graph.name, graph.weight)}
    assert rows[(b, a, "compute")] == rows[(b, c, "compute")] == idf_share * math.sqrt(4)
    assert rows[(c, a, "compute")] == idf_share  # c.py's own definition is no edge
    assert (c, c, "compute") not in rows
    assert rows[(d, b, "helper")] == math.log(5 / 1) and rows[(d, c, "compute")] == idf_share * 3
