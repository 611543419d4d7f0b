"""JVM stack traces (Java, Kotlin, Scala): `at pkg.Class.method(File.java:N)`, `Caused by:` (the root cause,
where the fix usually is) and `Suppressed:` (secondary failures while closing: related, never primary)."""

from __future__ import annotations

import re

from .model import Raw, Trace

_JVM_HEADER = re.compile(r"^(?:Exception in thread \"[^\"]*\" |Caused by: |\s*Suppressed: )?(?P<exc>[\w$.]+(?:Exception|Error|Throwable)\b.*)$")
_JVM_AT = re.compile(r"^\s+at (?:[\w.$-]+/)?(?P<cls>[\w$.]+)\.(?P<meth>[\w$<>-]+)\((?P<loc>[^)]*)\)")
_JVM_MORE = re.compile(r"^\s+\.\.\. \d+ (more|common frames omitted)\s*$")
_JVM_LIB = re.compile(r"^(java|javax|jdk|sun|com\.sun|kotlin|kotlinx|scala|org\.junit|junit|org\.gradle|org\.apache\.maven)\.")


def parse_jvm(lines: list[str], taken: set[int]) -> list[Trace]:
    traces: list[Trace] = []
    trace: Trace | None = None
    section: list[Raw] = []
    message = ""
    last_at = -2
    related = False  # inside a Suppressed: block (and the causes nested under it)

    def close() -> None:
        nonlocal section
        if section and trace is not None:
            section.reverse()  # the JVM prints innermost first
            for f in section:
                f.message = message
            trace.sections.append(section)
            trace.frames.extend(section)
        section = []

    for i, ln in enumerate(lines):
        if i in taken:
            continue
        if a := _JVM_AT.match(ln):
            loc = a["loc"]
            lm = re.match(r"^(?P<file>[^:]+):(?P<line>\d+)$", loc)
            if trace is None:
                trace = Trace(start=i, frames=[])
                traces.append(trace)
            if lm:
                raw = Raw(
                    at=i, path=lm["file"], line=int(lm["line"]), function=f"{a['cls']}.{a['meth']}",
                    library_hint=bool(_JVM_LIB.match(a["cls"])) or "/" in ln.split("at ", 1)[1].split("(")[0],
                    java_class=a["cls"], related=related,
                )
                section.append(raw)
            taken.add(i)
            last_at = i
        elif _JVM_MORE.match(ln) and last_at == i - 1:
            taken.add(i)
            last_at = i
        elif (h := _JVM_HEADER.match(ln)) and (i + 1 < len(lines) and _JVM_AT.match(lines[i + 1])):
            close()
            if not ln.startswith(("Caused by: ", "\t", " ")) or trace is None:
                trace = Trace(start=i, frames=[])
                traces.append(trace)
            message = h["exc"].strip()
            if ln.lstrip().startswith("Suppressed: "):
                related = True  # a failure while cleaning up (close()), secondary to the one thrown
            elif not ln.startswith(("\t", " ")):
                related = False
            taken.add(i)
        elif section and last_at == i - 1:
            close()
    close()
    return [t for t in traces if t.frames]
