"""The workspace as the features see it: folders, their settings, open buffers."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from qwen_lsp.settings import Settings, load_settings_lenient

if TYPE_CHECKING:
    from qwen_lsp.lsp.server import QwenLanguageServer

log = logging.getLogger(__name__)
FROM_WORKSPACE = "fromWorkspace"  # editors/vscode/src/settings.ts


def _nested(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


@dataclass
class BufferSnapshot:
    text: str
    version: int | None


class Folders:
    """Workspace folders, the settings of each, and the editor's open buffers."""

    def __init__(self, server: QwenLanguageServer) -> None:
        self.server = server
        self.init_options: dict[str, Any] = {}
        self.config: dict[str, dict[str, Any]] = {}  # `qwen` section by workspace folder path ("" global)
        self._settings: dict[Path, Settings] = {}
        self._reported: set[tuple[str, str]] = set()  # each dropped value is shown once per session

    # -- folders -------------------------------------------------------------------------------

    def roots(self) -> list[Path]:
        workspace = self.server.workspace
        folders = [to_fs_path(f.uri) for f in workspace.folders.values()]
        roots = [Path(p) for p in folders if p]
        if not roots and workspace.root_path:
            roots = [Path(workspace.root_path)]
        return roots

    def root_for(self, path: Path) -> Path:
        """The innermost workspace folder holding `path` (else the first one, else its directory)."""
        inside = [r for r in self.roots() if path == r or r in path.parents]
        if inside:
            return max(inside, key=lambda r: len(r.parts))
        roots = self.roots()
        return roots[0] if roots else (path if path.is_dir() else path.parent)

    def outside(self, path: Path) -> str | None:
        """Why Qwen cannot work on `path`, or None: it lies outside every workspace folder. A task
        names its file relative to a folder, and the bare name of an outside file would name
        another file there (a fix would edit `<folder>/app.py` for `/elsewhere/app.py`)."""
        roots = self.roots()
        if not roots or any(path == r or r in path.parents for r in roots):
            return None
        return f"{path} is not in a workspace folder: open its folder (or add it to the workspace) to ask Qwen about it"

    def locate(self, uri: str) -> tuple[Path, Path, str]:
        """The file system path of `uri`, its workspace folder, and its path relative to that
        folder (its name when it lies outside every folder)."""
        path = Path(to_fs_path(uri) or uri)
        return (path, *self.place(path))

    def place(self, path: Path) -> tuple[Path, str]:
        """The workspace folder of `path`, and `path` relative to it (its name when outside)."""
        root = self.root_for(path)
        return root, path.relative_to(root).as_posix() if root in path.parents else path.name

    # -- settings ------------------------------------------------------------------------------

    def settings_for(self, root: Path) -> Settings:
        """The settings of one folder. A bad value (from the editor, QWEN_LSP_* or the folder's
        pyproject.toml) is dropped and reported once, so that one typo does not take every
        feature down."""
        if root not in self._settings:
            user, from_workspace = self.editor_settings(root)
            self._settings[root], dropped = load_settings_lenient(root, user, from_workspace)
            news = [d for d in dropped if (d.source, d.key) not in self._reported]
            if news:
                self._reported.update((d.source, d.key) for d in news)
                message = f"Qwen: ignoring invalid settings {', '.join(map(str, news))}"
                log.warning("%s", message)
                self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
        return self._settings[root]

    def editor_settings(self, root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        """The editor's settings for `root`, split by origin: the user's, and those from a workspace-level
        origin, which the repository chose (the VS Code extension sends those under `fromWorkspace`;
        any value the folder-scoped `qwen` section has that the global one lacks came from the folder
        too). The server treats the second kind as repository settings (settings.repo_settings)."""
        user = {**self.init_options, **self.config.get("", {})}
        folder = dict(self.config.get(str(root), {}))
        from_workspace = {**_nested(user.pop(FROM_WORKSPACE, None)), **_nested(folder.pop(FROM_WORKSPACE, None))}
        from_workspace |= {key: value for key, value in folder.items() if user.get(key) != value}
        return user, from_workspace

    def push_config(self, section: dict[str, Any]) -> None:
        """The `qwen` section a client pushed in didChangeConfiguration (it has no workspace/configuration)."""
        self.config[""] = section
        self._settings.clear()

    async def refresh_configuration(self) -> None:
        """Re-read the `qwen` section (global and per folder) when the client can serve it."""
        server = self.server
        caps = server.client_capabilities.workspace
        if caps is None or not caps.configuration:
            return
        roots = self.roots()
        items = [types.ConfigurationItem(section="qwen")]
        items += [types.ConfigurationItem(section="qwen", scope_uri=from_fs_path(str(r))) for r in roots]
        try:
            values = await server.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception as exc:  # a client that advertises but fails: keep initializationOptions
            log.warning("workspace/configuration failed: %s", exc, exc_info=True)
            return
        config: dict[str, dict[str, Any]] = {}
        for key, value in zip(["", *map(str, roots)], values or []):
            if isinstance(value, dict):
                config[key] = value
        self.config = config
        self._settings.clear()

    # -- buffers -------------------------------------------------------------------------------

    def snapshot(self, root: Path) -> dict[str, BufferSnapshot]:
        """Text and version of every open document under `root`, taken at once on the
        server loop: the engine thread reads this, never the live workspace."""
        out = {}
        for doc in list(self.server.workspace.text_documents.values()):
            path = Path(doc.path)
            if root in path.parents:
                out[path.relative_to(root).as_posix()] = BufferSnapshot(doc.source, doc.version)
        return out

    def open_document(self, path: Path):
        documents = self.server.workspace.text_documents
        uri = from_fs_path(str(path))
        doc = documents.get(uri) if uri else None
        if doc is None:  # the client may spell the URI differently (percent-encoding)
            doc = next((d for d in documents.values() if Path(d.path) == path), None)
        return doc
