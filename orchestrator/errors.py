"""Every failure orch reports on purpose: one class per kind, each with its own exit code.

The message names the thing that is wrong and the fix; only the CLI prints it.
"""


class OrchError(Exception):
    exit_code = 1


# 2 is click's own usage-error code; ours start at 3.
class UnknownCommit(OrchError):
    exit_code = 3


# An sdist or remote could not be brought into the mirror.
class SourceImportError(OrchError):
    exit_code = 4


class BackendUnavailable(OrchError):
    exit_code = 5


# CMake configure or compile failed; the message points at the log.
class BuildFailed(OrchError):
    exit_code = 6


# The build finished but a binary does not run (`--version` fails).
class ProbeFailed(OrchError):
    exit_code = 7


class NoSuchBuild(OrchError):
    exit_code = 8


# A build reference that matches several builds (build/reference.py): the line names them.
class AmbiguousBuild(OrchError):
    exit_code = 46


# A complete build whose files are gone or cannot run (deleted, not executable, a copy pointing elsewhere).
class BuildBroken(OrchError):
    exit_code = 30


class Interrupted(OrchError):
    exit_code = 130


# A program orch needs (git, cmake, ninja, pip) is not installed.
class MissingTool(OrchError):
    exit_code = 9


# A command-line value orch cannot use.
class InvalidOption(OrchError):
    exit_code = 10


# A model file is missing, is not a GGUF, or cannot serve in the requested role.
class ModelError(OrchError):
    exit_code = 11


# A recipe that cannot be rendered: syntax, unknown variable, bad metadata.
class RecipeError(OrchError):
    exit_code = 12


# A flag the build does not accept.
class DialectError(OrchError):
    exit_code = 13


# A model file missing, not GGUF, or a draft incompatible with its target.
class PreflightError(OrchError):
    exit_code = 14


# The sweep finished and is stored, but some runs failed or timed out.
class RunsFailed(OrchError):
    exit_code = 15


# The server exited, never became healthy, or did not engage speculation (stored per run as its class).
class ServerFailed(OrchError):
    exit_code = 16

    def __init__(self, message: str, failure_class: str, log_tail: str = ""):
        super().__init__(message)
        self.failure_class = failure_class
        self.log_tail = log_tail


# The results database cannot be opened (locked by another process, not a DuckDB file).
class DatabaseUnavailable(OrchError):
    exit_code = 17


# A read command given a results database that does not exist (reads never create one).
class NoDatabase(OrchError):
    exit_code = 24


# The results database lacks a table, view or column orch made (dropped by hand): `orch repair` restores it.
class DamagedSchema(OrchError):
    exit_code = 25


class NoSuchRun(OrchError):
    exit_code = 18


# No sweep with that id, or nothing stored yet to summarise or report.
class NoSuchSweep(OrchError):
    exit_code = 19


# SQL given to `orch query` that DuckDB rejects.
class QueryFailed(OrchError):
    exit_code = 20


# `--resume N` names a sweep of another recipe text, build or variables.
class ResumeMismatch(OrchError):
    exit_code = 21


# A log whose figures cannot be true (a negative count, acceptance over 100%): in a sweep, a parse_error run.
class ParseError(OrchError):
    exit_code = 23


# A commit prefix that matches several commits in the mirror.
class AmbiguousCommit(OrchError):
    exit_code = 22


# A server recipe that sets --host or --port: orch binds llama-server to 127.0.0.1 on a free port itself.
class AddressInRecipe(RecipeError):
    exit_code = 31


# `--resume` found no sweep of the same recipe text, build and variables; the message lists the candidates.
class NothingToResume(ResumeMismatch):
    exit_code = 32


# `orch parse` given files in which no kind of llama.cpp log is recognised (empty, binary, unrelated text).
class NothingRecognised(OrchError):
    exit_code = 28


# `orch logs RUN` for a run that has no stored logs (stopped before launch: skipped, failed pre-flight).
class NoStoredLogs(OrchError):
    exit_code = 29


# `orch run`: the recipe's missing model files, all named before anything runs, with how to point at your own.
class MissingModels(OrchError):
    exit_code = 33


# A Hugging Face model that cannot be fetched: no such reference, repo, file or quant, or no hub nor cache.
class HubError(OrchError):
    exit_code = 34


# `orch models quantize`: a type orch does not know, a missing source, or llama-quantize failing (log named).
class QuantizeFailed(OrchError):
    exit_code = 35


# A quality or bench arm that cannot measure what it claims: an evaluation text too short for the context, a base
# model whose vocabulary differs, a depth beyond the model's context, or llama-perplexity/llama-bench output that
# names no result.
class QualityInputError(OrchError):
    exit_code = 36


# A context depth whose KV cache and weights do not fit the memory the machine has, said before launch.
class ContextDoesNotFit(OrchError):
    exit_code = 37


# `orch bisect` given a range it cannot search: an end not among the candidates or known releases, fewer than two
# commits, or an end that does not build or measure.
class BisectRangeError(OrchError):
    exit_code = 38


# `orch bisect --resume` with no unfinished bisect, one already done, or one whose recipe file has changed.
class BisectResumeError(OrchError):
    exit_code = 39


# `orch history`: no stored runs of the recipe and arm with the metric on any build asked for.
class NoHistory(OrchError):
    exit_code = 40


# `orch run --executor ray` where Ray is not installed: the message says how to install the extra.
class RayMissing(OrchError):
    exit_code = 41


# `orch import` given a path that is not an orch export (no manifest.json, no results file) or one made by a newer
# orch than this one; `orch export` naming a sweep that is not stored.
class BadExport(OrchError):
    exit_code = 42


# `orch import` of an export with a table missing, truncated, altered (sha256 or row count not the manifest's) or of
# other columns than orch writes; nothing of it is written, no results file is created.
class ExportDamaged(BadExport):
    exit_code = 45


# `orch import`: rows whose global id is stored already with different content; everything else was merged, the stored
# rows were kept, and the message names the conflicting rows.
class ImportConflicts(OrchError):
    exit_code = 43


# `orch run --executor ray`: the Ray cluster cannot be reached at --address, or no alive node matches --hosts (or none
# has a GPU for a CUDA build).
class ClusterUnavailable(OrchError):
    exit_code = 44


# `orch models get`: a model whose packages pip cannot fetch (the index unreachable, a package missing), or whose
# assembled file's size or sha256 is not the catalogue's (or the packaged SHA256SUMS's); nothing partial is left at
# the destination.
class PackagedModelError(OrchError):
    exit_code = 47


# `orch models quantize` and quality recipes: the source model is already quantized (llama-quantize refuses to
# quantize it again unless allowed, and a label "f16" would be a lie).
class QuantizedSource(QuantizeFailed):
    exit_code = 48


# `orch tune` refused a workload whose plain decoding loops (an n-gram draft would win by copying the loop).
class LoopingWorkload(OrchError):
    exit_code = 49


# `orch tune --resume` names no resumable tune, or its recipe changed since it started.
class TuneResumeError(OrchError):
    exit_code = 50


# `orch import` of an export or results file holding a row orch never writes: a key that is NULL or repeated, a log
# row that is not gzip or not its stated size; refused before anything is written, naming table and row.
class ExportRowRefused(BadExport):
    exit_code = 51


# A stored log row that does not unpack (an import from before rows were checked, a hand edit): `orch logs` stops on
# it, `orch show` says so in place of that stream, `orch reparse` keeps the run as stored.
class StoredLogDamaged(OrchError):
    exit_code = 52


# `orch compare --fail-on regression`: a test the head build is measurably slower on, or one side did not measure
# (newly failing, skipped or ok); the comparison is printed first, as without the option (asv's gate).
class Regressed(OrchError):
    exit_code = 53


# `orch probe`: llama-bench failed, or printed no timing, for a model the recipe drafts with (the message names the
# model, the command and what it said); nothing is stored for that model.
class CostProbeFailed(OrchError):
    exit_code = 54


# A write found no space left (or a quota) on its file system: the line names the file, the file system's free space.
class DiskFull(OrchError):
    exit_code = 55
