"""`solbench leaderboard add|show|export|remove`: external kernels side by side, ranked fairly (EXAMPLES).

Without a store (no --db and no reports/leaderboard.sqlite here, as on a fresh clone) or with --recorded,
`show` and `export` rank the recorded baseline runs shipped with solbench (solbench.leaderboard.recorded).
"""

from __future__ import annotations

from pathlib import Path

from solbench import schemas
from solbench.core.options import WIDE, add_to_parser

HELP = "a leaderboard of kernels: add runs, show the fair ranking, export a static web page"
EXAMPLES = """\
solbench leaderboard add reports/RUN/results.json --name my-kernel --author me
solbench leaderboard add baselines/h200/hopper-d128.json --impl fa3      # a baseline library as an entry
solbench leaderboard show --suite hopper --arch h200
solbench leaderboard show --suite hopper --arch h200 --json
solbench leaderboard show --recorded --arch h200 --suite hopper --markdown     # the README's table
solbench leaderboard export --html site/
solbench leaderboard remove my-kernel
"""


def add_arguments(parser) -> None:
    from solbench.leaderboard.store import DEFAULT_DB

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    action = {"formatter_class": parser.formatter_class}

    def with_db(p):
        p.add_argument("--db", type=Path, help=f"leaderboard file (default {DEFAULT_DB})")
        return p

    def with_baselines(p):
        p.add_argument("--baselines-dir", type=Path,
                       help="recorded baseline runs, one folder per arch (default: those shipped with solbench, "
                       "see `solbench info --paths`)")
        return with_db(p)

    def with_selection(p):
        p.add_argument("--suite", help="only this suite")
        p.add_argument("--arch", help="only this arch (h200, b200, ...)")
        p.add_argument("--recorded", action="store_true", help="rank the recorded baseline runs (the seed and each "
                       "library), not a store; the default when there is no store")
        return with_baselines(p)

    add = with_baselines(sub.add_parser("add", **action,
                                        help="add a run's candidate (or --impl seed / a baseline) as an entry"))
    add.add_argument("results", type=Path, help="a results.json, or a run folder holding one")
    add.add_argument("--name", help="entry name (default: the candidate's file stem, or the --impl name)")
    add.add_argument("--author", default="", help="who made it")
    add.add_argument("--impl", default="candidate",
                     help="which implementation of the run: candidate (default), seed, or a baseline name such as fa3")
    show = with_selection(sub.add_parser("show", **action,
                                         help="print the ranking (one board per suite, arch and GPU)"))
    show.add_argument("--json", action="store_true", help=f"print one JSON object ({schemas.LEADERBOARD}) instead "
                      "of tables")
    show.add_argument("--markdown", action="store_true", help="print each board's ranking as a Markdown table "
                      "(the README's)")
    add_to_parser(show, (WIDE,))
    export = with_selection(sub.add_parser("export", **action, help="write a static, self-contained web page"))
    export.add_argument("--html", type=Path, required=True, metavar="DIR", help="folder for index.html and leaderboard.json")
    remove = with_db(sub.add_parser("remove", **action, help="remove entries by name"))
    remove.add_argument("name", help="entry name")
    remove.add_argument("--suite", help="only the entry of this suite")


def run(args) -> int:
    from solbench.leaderboard.store import DEFAULT_DB, Store

    db = args.db or DEFAULT_DB
    if args.action == "add":
        with Store(db) as store:
            entry = store.add_result(args.results, args.impl, args.name, args.author)
            boards = _boards(store.entries(entry.suite, entry.arch), args.baselines_dir)
        board, standing = next((b, s) for b in boards for s in b.standings if s.entry.name == entry.name
                               and b.gpu_model == entry.gpu_model)
        place = f"not ranked: {standing.reason}" if standing.reason else _place(board, standing)
        print(f"added {entry.name} ({entry.impl}, suite {entry.suite}, {entry.gpu_model}) to {db}; {place}")
        return 0
    if args.action == "remove":
        with Store(db, create=False) as store:
            n = store.remove(args.name, args.suite)
        print(f"removed {n} entr{'y' if n == 1 else 'ies'} named {args.name} from {db}")
        return 0
    if args.recorded or (args.db is None and not db.exists()):
        boards = _recorded_boards(args, db)
    else:
        with Store(db, create=False) as store:
            boards = _boards(store.entries(args.suite, args.arch), args.baselines_dir)
    if args.action == "show":
        from solbench.leaderboard.text import document, markdown, render

        if args.json:
            print(schemas.dumps(document(boards)))
        else:
            print("\n\n".join(map(markdown, boards)) if args.markdown else render(boards, args.wide))
        return 0
    from solbench.leaderboard.html import write_site

    index = write_site(boards, args.html)
    print(f"wrote {index}")
    return 0


def _place(board, standing) -> str:
    """'rank 2 of 5 on the 24 common scenarios, rank =1 coverage-weighted'."""
    from solbench.leaderboard.text import rank_label

    head = (f"rank {rank_label(standing)} of {len(board.ranked)} on the {len(board.common)} common scenarios"
            if board.common else "no common scenario")
    return f"{head}, rank {rank_label(standing, weighted=True)} coverage-weighted"


def _recorded_boards(args, db: Path):
    """The boards of the recorded baseline runs alone (solbench.leaderboard.recorded)."""
    import sys

    from solbench.leaderboard.recorded import recorded_entries
    from solbench.leaderboard.store import default_baselines_dir, load_baseline_runs

    root = args.baselines_dir or default_baselines_dir()
    if not args.recorded:
        print(f"no leaderboard at {db}: ranking the recorded baseline runs in {root} "
              "(`solbench leaderboard add` starts a store)", file=sys.stderr)
    runs = load_baseline_runs(root)
    entries = [e for e in recorded_entries(runs)
               if (not args.suite or e.suite == args.suite) and (not args.arch or e.arch == args.arch)]
    return _boards(entries, args.baselines_dir, runs)


def _boards(entries, baselines_dir, runs=None):
    from solbench import __version__
    from solbench.core.errors import ConfigError
    from solbench.core.suites import load_suite
    from solbench.leaderboard.rank import build_boards
    from solbench.leaderboard.store import default_baselines_dir, load_baseline_runs

    hashes = {}
    for name in {e.suite for e in entries}:
        try:
            hashes[name] = load_suite(name).hash
        except ConfigError:
            pass  # not a shipped suite: its entries are listed apart with that reason
    if runs is None:
        runs = load_baseline_runs(baselines_dir or default_baselines_dir(), {e.arch for e in entries})
    return build_boards(entries, runs, hashes, __version__)
