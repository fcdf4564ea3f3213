"""The SQLite session store under load: append rate, search latency, concurrent writers.

The measurements (the issue's targets in brackets):

- ``append``: messages/s written the way the agent loop writes them, one ``append_message``
  (one transaction) per message, cycling user / assistant-with-tool-call / tool result
  [>= 5,000/s]. Medians of ``--runs`` runs on a fresh database, then once more on the corpus
  database when ``search`` built one.
- ``turns``: transactions and statements of the store per turn, a one-message turn and one
  with a batch of three tool calls (``session_turns.py``; a step's writes are one transaction).
- ``search``: latency of ``store.search`` (20 hits, snippets included) over a generated corpus of
  ``--messages`` messages (English with a long-tailed vocabulary, CJK, URLs, file names, error
  codes, tool output), for a mix of queries: common, mid-frequency and rare words, two-word
  queries, CJK substrings, URL and file-name substrings, error codes, words that match nothing
  [p95 <= 50 ms at 1,000,000]. The corpus is written with ``executemany`` in big transactions
  (the FTS triggers fill both indexes); its generation time is printed. ``--db`` keeps the corpus
  for later runs (it is reused when it already holds enough messages).
- ``resume``: start-up of ``hermes chat --resume ID -q`` on sessions of 1,000, 10,000 and
  50,000 messages, against a fresh ``hermes chat -q`` in the same home: seconds from process
  start to the first request reaching the test kit's fake LLM server, context compression on
  (the compressor engine, a window large enough that nothing is compressed)
  [<= +0.2 s over a fresh chat at 50,000]; then the CPU time of the parts that grow with the
  session, measured in the benchmark's own process: reading it from the store and the
  compressor's token estimate.
- ``procs``: ``--processes`` processes append to one ``state.db`` for ``--seconds``; afterwards
  every message each reported as written must be present; errors are counted
  [every message present, 0 lock errors].

Usage: python benchmarks/sessions.py [--only append,turns,search,resume,procs]
       [--messages 1000000] [--seconds 30] [--processes 8] [--runs 5] [--db PATH]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hermes_core.session_store import (
    INSERT_MESSAGE_SQL,
    SessionStoreError,
    SQLiteSessionStore,
    iter_message_rows,
)
from hermes_hookspecs import SessionInfo

# --- the corpus ---------------------------------------------------------------------------

COMMON = (
    "the of and to in is that it for you was with on as have be at this are from or not by "
    "but what all were when we there can an your which their if do will each about how up out "
    "them then she many some so these would other into has more her two like him see time "
    "could no make than first been its who now people my made over did down only way find use "
    "may water long little very after words called just where most know get through back much "
    "before go good new write our used me man too any day same right look think also around "
    "another came come work three word must because does part even place well such here take "
    "why things help put years different away again off went old number great tell men say "
    "small every found still between name should home big give air line set own under read "
    "last never us left end along while might next sound below saw something thought both few "
    "those always looked show large often together asked house world going want school "
    "important until form food keep children feet land side without boy once animals life "
    "enough took sometimes four head above kind began almost live page got earth need far hand "
    "high year mother light parts country father let night following picture being study "
    "second eyes soon times story boys since white days ever paper hard near sentence better "
    "best across during today others however sure means knew try told young miles sun ways"
).split()
TECH = (
    "error connection refused timeout database server client request response function "
    "variable python docker container kubernetes deploy config yaml json parse exception "
    "traceback module import install package version upgrade migration schema index query "
    "cache memory thread process lock socket port network proxy certificate token auth "
    "password login session cookie header payload endpoint route handler middleware logging "
    "debug release build compile test pytest fixture assert mock patch commit branch merge "
    "rebase checkout remote origin upstream pipeline workflow artifact registry image volume "
    "mount permission denied directory path file folder symlink encoding unicode bytes buffer "
    "stream async await coroutine event loop callback promise retry backoff queue worker "
    "scheduler cron job task agent model prompt context compression summary tool result"
).split()
CJK_WORDS = (
    "数据库 连接 失败 服务器 请求 响应 超时 错误 配置 文件 目录 权限 用户 密码 登录 会话 "
    "缓存 内存 线程 进程 网络 代理 证书 部署 容器 镜像 版本 升级 迁移 索引 查询 日志 调试 "
    "测试 构建 编译 提交 分支 合并 任务 模型 上下文 压缩 摘要 工具 结果 问题 解决 方法 "
    "系统 环境 变量 函数 模块 安装 依赖 接口 参数 返回 异常 处理 性能 优化 安全 备份 恢复 "
    "设置 主机 端口 协议 加密 签名 队列 消息 事件 回调 异步 同步 搜索 全文 检索 中文 "
    "今天 明天 时间 地址 名称 类型 格式 编码 字符 长度 大小 数量 状态 成功 开始 结束"
).split()
JA_WORDS = "データベース 接続 エラー 設定 ファイル サーバー 検索 確認 お願い します".split()
TLDS = ("com", "org", "net", "io", "dev", "cn")
FILES = (
    "config.yaml settings.json main.py app.ts Dockerfile docker-compose.yml README.md "
    "requirements.txt pyproject.toml index.html server.go lib.rs Makefile setup.cfg .env "
    "state.db nginx.conf package.json tsconfig.json webpack.config.js"
).split()
SYLLABLES = (
    "ka ri to mu sen lo va dre qui pha nor tel bis cor zan gre fol mi ux tra pen vol "
    "sha ric dom pel tor vin"
).split()


class Corpus:
    """A deterministic generator of agent-like messages."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        rng = random.Random(seed + 1)
        tail = set()
        while len(tail) < 40_000:
            tail.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
        self.vocab = COMMON + TECH + sorted(tail)
        n = len(self.vocab)
        self.weights = [1.0 / (rank + 1) ** 1.05 for rank in range(n)]  # Zipf-like
        self.cum = list(_accumulate(self.weights))
        self.domains = [
            f"{rng.choice(self.vocab[300:3000])}{rng.choice(['', '-api', '-docs', 'hub'])}."
            f"{rng.choice(TLDS)}"
            for _ in range(2000)
        ]

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def sentence(self, lo: int, hi: int) -> str:
        words = self.words(self.rng.randint(lo, hi))
        words[0] = words[0].capitalize()
        return " ".join(words) + self.rng.choice(".?!.")

    def url(self) -> str:
        path = "/".join(
            self.rng.choice(self.vocab[100:8000]) for _ in range(self.rng.randint(1, 3))
        )
        return f"https://{self.rng.choice(self.domains)}/{path}?id={self.rng.randint(1, 99999)}"

    def cjk(self, k: int) -> str:
        pool = JA_WORDS if self.rng.random() < 0.1 else CJK_WORDS
        return "".join(self.rng.choice(pool) for _ in range(k)) + "。"

    def detail(self) -> str:
        r = self.rng.random()
        if r < 0.3:
            return self.url()
        if r < 0.55:
            return self.rng.choice(FILES)
        if r < 0.75:
            return f"E{self.rng.randint(1000, 9999)}"
        return self.cjk(self.rng.randint(2, 6))

    def message(self, role: str, call_id: str) -> dict:
        rng = self.rng
        if role == "user":
            parts = [self.sentence(4, 25)]
            if rng.random() < 0.5:
                parts.append(self.detail())
            if rng.random() < 0.15:
                parts = [self.cjk(rng.randint(3, 12))]
            return {"role": "user", "content": " ".join(parts)}
        if role == "assistant":
            if rng.random() < 0.5:
                args = json.dumps({"path": rng.choice(FILES), "query": " ".join(self.words(3))})
                return {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": rng.choice(["read_file", "terminal"]),
                                         "arguments": args},
                        }
                    ],
                    "_responses_items": [{"type": "reasoning", "id": f"rs_{call_id}"}],
                }  # fmt: skip
            text = " ".join(self.sentence(6, 30) for _ in range(rng.randint(1, 4)))
            if rng.random() < 0.3:
                text += " " + self.detail()
            if rng.random() < 0.1:
                text = self.cjk(rng.randint(5, 30))
            return {"role": "assistant", "content": text, "finish_reason": "stop"}
        lines = []
        for _ in range(rng.randint(2, 10)):
            kind = rng.random()
            if kind < 0.3:
                lines.append(f"{self.url()} {rng.choice(['200 OK', '404', '500', 'timeout'])}")
            elif kind < 0.5:
                lines.append(f"error E{rng.randint(1000, 9999)}: " + " ".join(self.words(6)))
            elif kind < 0.6:
                lines.append(self.cjk(rng.randint(2, 8)))
            else:
                lines.append(
                    f"{rng.choice(FILES)}:{rng.randint(1, 900)}: " + " ".join(self.words(8))
                )
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "tool_name": rng.choice(["read_file", "terminal"]),
            "content": "\n".join(lines),
        }

    def conversation(self, n: int, prefix: str) -> list[dict]:
        out, role = [], "user"
        for i in range(n):
            # a tool result answers the call just made: the transcript is valid
            call_id = f"{prefix}_{i - 1 if role == 'tool' else i}"
            message = self.message(role, call_id)
            out.append(message)
            if role == "user":
                role = "assistant"
            elif role == "assistant":
                role = "tool" if message.get("tool_calls") else "user"
            else:
                role = "assistant"
        return out


def _accumulate(values):
    total = 0.0
    for v in values:
        total += v
        yield total


def build_corpus(
    path: Path, messages: int, per_session: int = 40, batch: int = 50_000
) -> tuple[float, float]:
    """Write ``messages`` generated messages to the store at ``path`` and index them; returns
    the seconds each took (zeros when the file already held them)."""
    SQLiteSessionStore(path).close()  # the schema
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    have = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    if have >= messages:
        conn.close()
        return 0.0, 0.0
    corpus = Corpus()
    started = time.perf_counter()
    now = time.time()
    written, session_no = have, conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    while written < messages:
        conn.execute("BEGIN")
        sessions, rows = [], []
        while len(rows) < batch and written + len(rows) < messages:
            n = min(per_session, messages - written - len(rows))
            sid = f"bench-{session_no:07d}"
            session_no += 1
            when = now - corpus.rng.random() * 365 * 86400
            convo = corpus.conversation(n, sid)
            sessions.append(
                (
                    sid,
                    "cli",
                    "bench-model",
                    "bench",
                    when,
                    " ".join(str(convo[0]["content"]).split())[:60],
                    len(convo),
                )
            )
            rows.extend(iter_message_rows(convo, sid, when))
        conn.executemany(
            "INSERT INTO sessions (id, source, model, provider, started_at, title, "
            "message_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
            sessions,
        )
        conn.executemany(INSERT_MESSAGE_SQL, rows)
        conn.execute("COMMIT")
        written += len(rows)
        rate = (written - have) / (time.perf_counter() - started)
        print(f"  generated {written:,} messages ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    conn.close()
    generated = time.perf_counter() - started
    started = time.perf_counter()
    store = SQLiteSessionStore(path)
    while store.index_pending(50_000):
        print("  indexed 50,000 more", file=sys.stderr, flush=True)
    store.close()
    return generated, time.perf_counter() - started


# --- append -------------------------------------------------------------------------------


def bench_append(path: Path, count: int, label: str, index_batch: int | None = None) -> float:
    """Messages/s for ``count`` appends, one transaction each, in a fresh session, with the
    store's default batched indexing (or ``index_batch``); indexing left waiting at the end is
    done and counted too, so the figure is the sustained rate of a searchable store."""
    kwargs = {} if index_batch is None else {"index_batch": index_batch}
    store = SQLiteSessionStore(path, **kwargs)
    corpus = Corpus(seed=int(time.time()))
    sid = f"append-{label}-{time.time_ns()}"
    store.create_session(SessionInfo(id=sid, model="bench"))
    convo = corpus.conversation(count, sid)
    started = time.perf_counter()
    for message in convo:
        store.append_message(sid, message)
    store.index_pending()
    elapsed = time.perf_counter() - started
    assert len(store.get_messages(sid)) == count
    store.close()
    return count / elapsed


def bench_append_path(path: Path, count: int) -> tuple[float, float]:
    """Messages/s of the append path alone (indexing deferred), then of indexing them all."""
    store = SQLiteSessionStore(path, index_batch=10**9)
    sid = f"append-path-{time.time_ns()}"
    store.create_session(SessionInfo(id=sid, model="bench"))
    convo = Corpus(seed=5).conversation(count, sid)
    started = time.perf_counter()
    for message in convo:
        store.append_message(sid, message)
    appended = time.perf_counter() - started
    started = time.perf_counter()
    store.index_pending()
    indexed = time.perf_counter() - started
    store.close()
    return count / appended, count / indexed


# --- search -------------------------------------------------------------------------------


def make_queries(corpus: Corpus, n: int = 240) -> list[tuple[str, str]]:
    rng = random.Random(11)
    vocab = corpus.vocab
    queries: list[tuple[str, str]] = []
    kinds = [
        ("common word", lambda: rng.choice(TECH[:30] + COMMON[:40])),
        ("mid word", lambda: rng.choice(vocab[400:5000])),
        ("rare word", lambda: rng.choice(vocab[20_000:])),
        ("two words", lambda: f"{rng.choice(TECH)} {rng.choice(vocab[200:3000])}"),
        ("cjk", lambda: rng.choice(CJK_WORDS) + rng.choice(CJK_WORDS)),
        ("cjk short", lambda: rng.choice(CJK_WORDS)),
        ("url", lambda: rng.choice(corpus.domains) + "/" + rng.choice(vocab[100:8000])),
        ("domain", lambda: rng.choice(corpus.domains)),
        ("file name", lambda: rng.choice(FILES)),
        ("error code", lambda: f"E{rng.randint(1000, 9999)}"),
        ("no match", lambda: "zyxqv" + str(rng.randint(100, 999))),
        ("phrase", lambda: f'"connection refused {rng.choice(vocab[:300])}"'),
    ]
    while len(queries) < n:
        for kind, make in kinds:
            queries.append((kind, make()))
    return queries[:n]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def bench_search(path: Path, runs: int) -> None:
    store = SQLiteSessionStore(path)
    queries = make_queries(Corpus())
    per_kind: dict[str, list[float]] = {}
    p95s = []
    hits_total = 0
    for run in range(runs + 1):  # the first pass warms the page cache and is not counted
        times = []
        for kind, query in queries:
            started = time.perf_counter()
            hits = store.search(query, limit=20)
            ms = (time.perf_counter() - started) * 1000
            times.append(ms)
            if run:
                per_kind.setdefault(kind, []).append(ms)
            elif hits:
                hits_total += 1
        if run:
            p95s.append(pct(times, 95))
        else:
            print(f"  first (cold) pass: p50 {pct(times, 50):.1f} ms, p95 {pct(times, 95):.1f} ms")
    all_times = [t for v in per_kind.values() for t in v]
    print(f"search over {store.stats()['messages']:,} messages, {len(queries)} queries x {runs}"
          f" runs ({hits_total}/{len(queries)} queries have hits)")  # fmt: skip
    print(f"  p50 {pct(all_times, 50):.1f} ms  p95 {statistics.median(p95s):.1f} ms (median of "
          f"runs)  p99 {pct(all_times, 99):.1f} ms  max {max(all_times):.1f} ms")  # fmt: skip
    for kind, values in per_kind.items():
        print(f"    {kind:<12} p50 {pct(values, 50):7.1f} ms   p95 {pct(values, 95):7.1f} ms")
    store.close()


# --- concurrent processes ------------------------------------------------------------------


def _writer(path: str, index: int, seconds: float, queue) -> None:
    store = SQLiteSessionStore(path)
    corpus = Corpus(seed=100 + index)
    sid = f"proc-{index}-{os.getpid()}"
    report = {"session": sid, "written": 0, "lock_errors": 0, "other_errors": 0, "ms": []}
    try:
        store.create_session(SessionInfo(id=sid, model="bench"))
        deadline = time.monotonic() + seconds
        convo = corpus.conversation(2000, sid)
        i = 0
        while time.monotonic() < deadline:
            message = dict(convo[i % len(convo)])
            message["_seq"] = i
            started = time.perf_counter()
            try:
                store.append_message(sid, message)
            except SessionStoreError as exc:
                key = (
                    "lock_errors" if "locked" in str(exc) or "busy" in str(exc) else "other_errors"
                )
                report[key] += 1
                report.setdefault("first_error", str(exc))
                continue
            report["ms"].append((time.perf_counter() - started) * 1000)
            report["written"] += 1
            i += 1
    except Exception as exc:  # noqa: BLE001 - counted and reported, never hidden
        report["other_errors"] += 1
        report.setdefault("first_error", f"{type(exc).__name__}: {exc}")
    finally:
        store.close()
        queue.put(report)


def bench_processes(path: Path, processes: int, seconds: float) -> None:
    SQLiteSessionStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [
        ctx.Process(target=_writer, args=(str(path), i, seconds, queue)) for i in range(processes)
    ]
    for w in workers:
        w.start()
    reports = [queue.get(timeout=seconds + 120) for _ in workers]
    for w in workers:
        w.join()
    store = SQLiteSessionStore(path)
    written = sum(r["written"] for r in reports)
    present = 0
    missing = 0
    for r in reports:
        got = store.get_messages(r["session"])
        present += len(got)
        seqs = [m.get("_seq") for m in got]
        if seqs != list(range(r["written"])):
            missing += 1
    lock_errors = sum(r["lock_errors"] for r in reports)
    other = sum(r["other_errors"] for r in reports)
    latencies = [ms for r in reports for ms in r["ms"]] or [0.0]
    print(
        f"{processes} processes appending for {seconds:g}s: written {written:,}, present "
        f"{present:,} ({written / seconds:,.0f} msg/s in total), sessions with gaps {missing}, "
        f"lock errors {lock_errors}, other errors {other}"
    )
    print(
        f"  append latency under contention: p50 {pct(latencies, 50):.1f} ms, p99 "
        f"{pct(latencies, 99):.1f} ms, max {max(latencies):.0f} ms"
    )
    for r in reports:
        if "first_error" in r:
            print(f"    {r['session']}: {r['first_error']}")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="append,turns,search,resume,procs")
    parser.add_argument("--messages", type=int, default=1_000_000, help="search corpus size")
    parser.add_argument("--append-count", type=int, default=5000, help="messages per append run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--db", type=Path, help="corpus database to build or reuse")
    args = parser.parse_args()
    only = set(args.only.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    print(
        f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )

    if "append" in only:
        rates = [
            bench_append(tmp / f"append-{i}.db", args.append_count, "fresh")
            for i in range(args.runs)
        ]
        print(
            f"append: {statistics.median(rates):,.0f} messages/s sustained, search indexing "
            f"included (median of {args.runs} runs of {args.append_count:,}, one transaction "
            f"per message; min {min(rates):,.0f}, max {max(rates):,.0f})"
        )
        paths = [
            bench_append_path(tmp / f"path-{i}.db", args.append_count) for i in range(args.runs)
        ]
        print(
            f"  append path alone (indexing deferred): "
            f"{statistics.median(p[0] for p in paths):,.0f} messages/s; indexing them afterwards:"
            f" {statistics.median(p[1] for p in paths):,.0f} messages/s"
        )

    if "turns" in only:
        from session_turns import bench_turn_writes

        bench_turn_writes()

    if "search" in only:
        db = args.db or tmp / "corpus.db"
        generated, indexed = build_corpus(db, args.messages)
        size = sum(os.path.getsize(p) for p in (db, Path(f"{db}-wal")) if p.exists())
        if generated:
            print(f"corpus: {args.messages:,} messages generated in {generated:.1f}s "
                  f"({args.messages / generated:,.0f}/s, executemany, 50,000 per transaction), "
                  f"indexed in {indexed:.1f}s ({args.messages / max(indexed, 1e-9):,.0f}/s), "
                  f"{size / 1e6:,.0f} MB")  # fmt: skip
        else:
            print(f"corpus: reusing {db} ({size / 1e6:,.0f} MB)")
        bench_search(db, args.runs)
        if "append" in only:
            rate = bench_append(db, args.append_count, "corpus")
            print(f"append into the corpus database: {rate:,.0f} messages/s")

    if "resume" in only:
        from session_resume import bench_resume

        bench_resume(args.runs)

    if "procs" in only:
        bench_processes(tmp / "procs.db", args.processes, args.seconds)


if __name__ == "__main__":
    main()
