"""The service's checks, without a server: what a submission must be, and what it becomes on the command line."""

import pytest

pytest.importorskip("pydantic", reason="needs the serve extra: pip install 'solbench[serve]'")

from solbench.serve.requests import JobRequest, Limits  # noqa: E402
from solbench.serve.tokens import read_tokens  # noqa: E402
from solbench.serve.service import ServeError, Service  # noqa: E402

FORWARD = b"def forward(inputs):\n    return None\n"


@pytest.fixture
def service(tmp_path):
    s = Service(tmp_path / "state", "cpu", ["cpu"], Limits(upload_bytes=1000, queue_per_client=2))
    yield s
    s.queue.close()


def refusal(call, status: int) -> str:
    with pytest.raises(ServeError) as caught:
        call()
    assert caught.value.status == status and "\n" not in str(caught.value)
    return str(caught.value)


def test_a_job_request_is_the_run_options():
    request = JobRequest(suite="edge", quick=True, filter="decode", max_scenarios=3, flags=["-DTILE=64"],
                         allow_libs=["cutlass"], baselines="none")
    assert request.run_args() == ["--suite", "edge", "--baselines", "none", "--filter", "decode", "--max-scenarios",
                                  "3", "--flag=-DTILE=64", "--allow-lib", "cutlass", "--quick"]
    from solbench.front.cli import build_parser

    args = build_parser().parse_args(["run", "k.cu", *request.run_args()])  # what the job's process parses
    assert (args.suite, args.filter, args.max_scenarios, args.flag, args.quick) == ("edge", "decode", 3, ["-DTILE=64"], True)


def test_submissions_refused_before_they_queue(service):
    assert "plain file name" in refusal(lambda: service.submit("a", "../x.py", FORWARD, JobRequest()), 422)
    assert "at most 1000" in refusal(lambda: service.submit("a", "k.py", b"#" * 1001, JobRequest()), 413)
    assert "unknown suite" in refusal(lambda: service.submit("a", "k.py", FORWARD, JobRequest(suite="nope")), 422)
    assert "no scenario id" in refusal(lambda: service.submit("a", "k.py", FORWARD, JobRequest(filter="zzz")), 422)
    assert "baselines need a GPU" in refusal(lambda: service.submit("a", "k.py", FORWARD, JobRequest(baselines="fa3")), 422)
    assert "forward" in refusal(lambda: service.submit("a", "k.py", b"x = 1\n", JobRequest()), 422)
    for flag in ("-o/tmp/elsewhere.so", "-I/etc", "--include-path=/", "-Xcompiler=-fplugin=x.so"):
        assert "not taken by a server" in refusal(
            lambda: service.submit("a", "k.cu", b"", JobRequest(flags=["-DTILE=64", flag])), 422)
    assert service.queue.jobs() == [] and not list((service.state_dir / "jobs").iterdir())


def test_a_client_sees_only_its_jobs_and_only_so_many(service):
    job = service.submit("alice", "k.py", FORWARD, JobRequest())
    assert job["schema"] == "solbench.job/1" and job["state"] == "queued"
    assert (service.state_dir / "jobs" / job["id"] / "candidate" / "k.py").read_bytes() == FORWARD
    assert "no job" in refusal(lambda: service.status("bob", job["id"]), 404)
    assert service.jobs("bob") == []
    service.submit("alice", "k.py", FORWARD, JobRequest())
    assert "queued or running" in refusal(lambda: service.submit("alice", "k.py", FORWARD, JobRequest()), 429)
    assert "is queued" in refusal(lambda: service.summary("alice", job["id"]), 409)


def test_the_tokens_file_holds_digests_and_no_token(tmp_path):
    from solbench.core.errors import ConfigError
    from solbench.serve.tokens import main, token_digest

    path = tmp_path / "tokens.txt"
    path.write_text(f"# client digest\nalice {token_digest('0123456789abcdef0123')}\n\n"
                    f"bob {token_digest('fedcba9876543210fedc')}  # CI\n")
    tokens = read_tokens(path)
    assert tokens.client("0123456789abcdef0123") == "alice" and tokens.client("fedcba9876543210fedc") == "bob"
    assert tokens.client(token_digest("0123456789abcdef0123")) is None  # the file's words are not tokens
    assert tokens.client("") is None and tokens.clients() == {"alice", "bob"}
    path.write_text("carol 0123456789abcdef0123\n")  # a token itself, readable by any candidate: refused
    with pytest.raises(ConfigError, match="tokens.txt:1: expected 'CLIENT sha256:"):
        read_tokens(path)
    assert main(["dave"]) == 0


def test_the_state_folder_is_not_where_workers_write(tmp_path):
    import os

    from solbench.core.errors import ConfigError

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    from solbench.serve.setup import state_dir

    with pytest.raises(ConfigError, match="confined workers may write"):
        state_dir("/dev/shm/solbench-state")
    assert state_dir(tmp_path / "state").is_dir()
