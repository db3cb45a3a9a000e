"""Where a benchmark's build and models come from, said in one line before its figures: $ORCH_BUILDS_DIR and
$ORCH_MODELS where set, else the project's own (`make build` puts builds in ./builds, `orch models tiny` and
`orch models get` put models in ./models). Tiny models missing there are made from the build's vocabularies, as
`orch models tiny` would. A helper the benchmarks import, not a benchmark."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def project(build_ref: str | None, *, tiny: bool = True) -> str:
    """The runnable build for build_ref (None: the newest) and, with tiny, the tiny models, both found or made;
    prints what it uses and returns the build's name. SystemExit with the fix when there is no build."""
    from orchestrator import config
    from orchestrator.build.on_disk import runnable_build
    from orchestrator.errors import OrchError
    from orchestrator.models import tiny as tiny_models
    from orchestrator.models import tiny_methods

    os.environ.setdefault("ORCH_BUILDS_DIR", str(ROOT / "builds"))
    os.environ.setdefault("ORCH_MODELS", str(ROOT / "models"))
    try:
        build = runnable_build(build_ref)
    except OrchError as exc:
        said = f"{Path(sys.argv[0]).name}: {exc} (run `make build` in {ROOT}, or set ORCH_BUILDS_DIR)"
        raise SystemExit(said) from None
    models = config.models_dir()
    made = ""
    if tiny and not (models / "tiny-target.gguf").is_file():
        vocabs = tiny_models.VocabCache(tiny_models.find_vocab_dir(Path(build.record["src_dir"])))
        tiny_models.make_tiny_models(models, vocabs.vocab_dir, vocabs=vocabs)
        tiny_methods.make_method_models(models, vocabs.vocab_dir, vocabs=vocabs)
        made = " (tiny models made there now)"
    print(f"using build {build.name} from {config.builds_root()} and models from {models}{made}", flush=True)
    return build.name
