"""Version and build banners of every era -> {"version", "build_number", "commit", "built_with"}.

    --version, mid-2026 on:   version: 0.5.0-dev (build 1, commit 0c1e570)  +  built with GNU 12.2.0 for Linux x86_64
    --version, 2023-12 on:    version: 5142 (80f19b41)                       +  built with ... for ...
    run banner 2024-09 on:    build: 4205 (c6bc7395) with GNU 12.2.0 for Linux x86_64   (hidden at default -lv since 2026-05)
    run banner before:        main: build = 1380 (2b4ea35)  +  main: built with ... for ...
    chat llama-cli (2025-12 ->): build      : b1-0c1e570
Build numbers count the commits of whatever repository was built (a one-commit sdist mirror says 1), so only the
commit identifies the source; the number is kept as printed.
"""

from __future__ import annotations

import re

from .lines import Line, clean_lines, to_int

SEMVER_RE = re.compile(r"^version: (\S+) \(build (\d+), commit ([0-9a-f]+|unknown)\)")
OLD_VERSION_RE = re.compile(r"^version: (\d+) \(([0-9a-f]+|unknown)\)")
BUILT_WITH_RE = re.compile(r"^(?:\w+: )?built with (.+?)\s*$")
# `build: N (C) with X for Y` (2024-09 ->) and `common_params_print_info: build N (C) with ...` (2026-05 ->, -lv 4,
# per LLAMACPP.md). Neither appears in the recorded f49e917/0c1e57098 tool logs: use `--version` for provenance.
BANNER_RE = re.compile(r"(?:^|: )build:? (\d+) \(([0-9a-f]+|unknown)\)(?: with (.+?))?(?: \(debug\))?\s*$")
MAIN_BUILD_RE = re.compile(r"^\w+: build = (\d+) \(([0-9a-f]+|unknown)\)")
# Chat llama-cli banner (`build      : b1-0c1e570`), the same `b<N>-<sha>` as the server's /props build_info.
CLI_BUILD_RE = re.compile(r"^build\s+: b(\d+)-([0-9a-f]+)$")


def parse_version_text(text: str, *, keep_unknown: bool = False) -> dict | None:
    """parse_version over raw text, e.g. a binary's `--version` output."""
    return parse_version(clean_lines(text), keep_unknown=keep_unknown)


def parse_version(lines: list[Line], *, keep_unknown: bool = False) -> dict | None:
    """The first banner found, completed by a following `built with` line; None when the log carries none.

    A build that reports commit `unknown` gets commit None, unless keep_unknown (the build probe refuses it).
    """
    info: dict | None = None
    for line in lines:
        t = line.text
        if info is None:
            info = _match_banner(t, keep_unknown)
            continue
        if info["built_with"] is None and (m := BUILT_WITH_RE.match(t)):
            info["built_with"] = m.group(1)
        if info["built_with"] is not None:
            break
    return info


def _match_banner(t: str, keep_unknown: bool) -> dict | None:
    if m := SEMVER_RE.match(t):
        found = (m.group(1), m.group(2), m.group(3), None)
    elif m := OLD_VERSION_RE.match(t):
        found = (None, m.group(1), m.group(2), None)  # before semantic versions the build number was the version
    elif m := MAIN_BUILD_RE.match(t) or CLI_BUILD_RE.match(t):
        found = (None, m.group(1), m.group(2), None)
    elif m := BANNER_RE.search(t):
        found = (None, m.group(1), m.group(2), m.group(3))
    else:
        return None
    version, build, commit, built_with = found
    return {
        "version": version,
        "build_number": to_int(build),
        "commit": None if commit == "unknown" and not keep_unknown else commit,
        "built_with": built_with,
    }
