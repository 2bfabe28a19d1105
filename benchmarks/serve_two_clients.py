"""Two clients of one `solbench serve` on one device: each client's ratios when its job runs alone, then when
both jobs are submitted at once. The server leases the device to one scenario of one job at a time, so the
ratios must agree within the A/A noise (`ab_experiment.py`).

    python benchmarks/serve_two_clients.py                      # on a GPU: --gpus all, suite real, --quick
    python benchmarks/serve_two_clients.py --device cpu --suite smoke --max-scenarios 3   # anywhere

Client a submits CANDIDATE_A, client b CANDIDATE_B, each against the seed. Needs `solbench[serve]`.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
TOKENS = {"a": "client-a-token-0123456789", "b": "client-b-token-0123456789"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(root: Path, device: list[str]) -> tuple[subprocess.Popen, str]:
    from solbench.serve.tokens import token_digest

    tokens = root / "tokens.txt"
    tokens.write_text("".join(f"{c} {token_digest(t)}\n" for c, t in TOKENS.items()))
    port = _free_port()
    log = open(root / "server.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "solbench", "serve", *device, "--state-dir", str(root / "state"),
                             "--tokens", str(tokens), "--port", str(port)], stdout=log, stderr=log)
    import httpx

    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/openapi.json", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise SystemExit(f"the server did not start: {(root / 'server.log').read_text()[-1500:]}")


def _job(url: str, client: str, candidate: Path, options: dict) -> dict:
    from solbench.client import Client

    with Client(url, token=TOKENS[client], timeout_s=3600) as c:
        job = c.submit(candidate, **options)
        started = time.monotonic()
        summary = c.wait(job["id"])
        return {"client": client, "summary": summary, "wall_s": time.monotonic() - started}


def _scores(row: dict) -> list[tuple]:
    s = row["summary"]
    return [(sc["comparator"], sc["geomean"], sc["ci95"]) for sc in s.get("scores", [])] or [("-", None, s.get("error"))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate-a", default=str(ROOT / "reference_kernels/examples/retiled_seed.cu"))
    ap.add_argument("--candidate-b", default=str(ROOT / "reference_kernels/seed_attention.cu"))
    ap.add_argument("--suite", default="real")
    ap.add_argument("--max-scenarios", type=int)
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--full-policy", action="store_true", help="the default policy instead of --quick")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.device == "cpu" and args.candidate_a.endswith(".cu"):
        args.candidate_a = args.candidate_b = str(ROOT / "reference_kernels/torch_attention.py")
    root = args.out or Path(tempfile.mkdtemp(prefix="serve-two-"))
    root.mkdir(parents=True, exist_ok=True)
    options = {"suite": args.suite, "quick": not args.full_policy, "max_scenarios": args.max_scenarios,
               "baselines": "none"}
    proc, url = _serve(root, ["--gpus", "all"] if args.device == "gpu" else ["--device", "cpu"])
    jobs = {"a": Path(args.candidate_a), "b": Path(args.candidate_b)}
    rows = []
    try:
        for client, cand in jobs.items():  # each alone, one after the other
            rows.append(("alone", _job(url, client, cand, options)))
        with ThreadPoolExecutor(2) as pool:  # both at once
            for done in pool.map(lambda kv: _job(url, kv[0], kv[1], options), jobs.items()):
                rows.append(("together", done))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    table = [(how, r["client"], jobs[r["client"]].name, comp, g, ci, round(r["wall_s"], 1))
             for how, r in rows for comp, g, ci in _scores(r)]
    (root / "two-clients.json").write_text(json.dumps([{"how": how, **r} for how, r in rows], indent=1))
    print(tabulate(table, headers=["run", "client", "candidate", "vs", "geomean", "95 % CI", "wall s"]))
    for client in jobs:
        alone = [g for how, r in rows if how == "alone" and r["client"] == client for _, g, _ in _scores(r)]
        together = [g for how, r in rows if how == "together" and r["client"] == client for _, g, _ in _scores(r)]
        if alone and together and alone[0] and together[0]:
            print(f"client {client}: together / alone = {together[0] / alone[0]:.4f}")
    print(f"server log and jobs: {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
