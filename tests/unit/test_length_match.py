"""A CLI arm's reference decodes the count of tokens the arm decoded (run/length_match.py)."""

from orchestrator.parse import ParsedLog
from orchestrator.recipe.plan import Arm
from orchestrator.run import length_match
from orchestrator.run.one_run import RunRecord
from orchestrator.run.prepare import PreparedArm

COMMON = ["-m", "gemma.gguf", "--temp", "0", "-n", "64", "-p", "hi"]
SPEC = ["/b/llama-speculative-simple", *COMMON]


def prepared(name, argv, *, reference=None, baseline=False, control=False, stop=None):
    arm = Arm(
        name=name,
        params={"n_predict": 64},
        argv=argv,
        literal=[True] * len(argv),
        is_baseline=baseline,
        is_control=control,
        reference=reference,
    )
    return PreparedArm(arm=arm, executed=list(argv), stop_reason=stop)


def record(generated, status="ok"):
    return RunRecord(1, {"status": status}, parsed=ParsedLog(metrics={"n_generated": generated}))


def arms(control_stop=None):
    base = prepared("baseline", ["/b/llama-completion", *COMMON], baseline=True)
    control = prepared(
        "control:llama-speculative-simple",
        [*SPEC, "--spec-type", "ngram-mod"],
        reference="baseline",
        control=True,
        stop=control_stop,
    )
    arm = prepared("ngram-mod", [*SPEC, "--spec-type", "ngram-mod"], reference="control:llama-speculative-simple")
    plain = prepared("draft", [*SPEC, "-md", "d.gguf"], reference="baseline")
    return {p.arm.name: p for p in (base, control, arm, plain)}


def test_a_control_runs_again_at_the_count_its_arm_decoded():
    by_name = arms()
    matched = length_match.matched_reference(record(73), by_name["ngram-mod"], by_name)
    assert matched.arm.name == "control~ngram-mod" and matched.arm.is_control and not matched.arm.is_baseline
    assert matched.executed[matched.executed.index("-n") + 1] == "72"  # speculative-simple decodes -n + 1
    assert matched.arm.argv[matched.arm.argv.index("-n") + 1] == "72"
    assert matched.arm.params == {"n_predict": 72, "length_of": "ngram-mod"}
    control = by_name["control:llama-speculative-simple"].executed
    assert control[control.index("-n") + 1] == "64"  # the original stays


def test_the_baseline_runs_again_at_the_count_when_it_is_the_reference():
    by_name = arms()
    matched = length_match.matched_reference(record(80), by_name["draft"], by_name)
    assert matched.arm.name == "baseline~draft" and matched.executed[matched.executed.index("-n") + 1] == "80"


def test_nothing_runs_where_the_counts_agree_or_cannot_be_matched():
    by_name = arms()
    assert length_match.matched_reference(record(65), by_name["ngram-mod"], by_name) is None  # -n 64: 65 tokens
    assert length_match.matched_reference(record(64), by_name["draft"], by_name) is None  # llama-completion: 64
    assert length_match.matched_reference(record(73, "failed"), by_name["ngram-mod"], by_name) is None
    assert length_match.matched_reference(record(None), by_name["ngram-mod"], by_name) is None
    control = by_name["control:llama-speculative-simple"]
    assert length_match.matched_reference(record(73), control, by_name) is None  # a control: never
    stopped = arms(control_stop="the build lacks --spec-type")
    assert length_match.matched_reference(record(73), stopped["ngram-mod"], stopped) is None
