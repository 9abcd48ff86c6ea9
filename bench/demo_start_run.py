#!/usr/bin/env python
"""Against a running `make demo`: how long "Start run" takes, and what the run page's progress shows.

    make demo                                   # in one shell (serves on 127.0.0.1:8000)
    .venv/bin/python bench/demo_start_run.py    # in another
    .venv/bin/python bench/demo_start_run.py --url http://127.0.0.1:8765 --models tiny-vlm --batch-size 8

Logs in as the demo curator over real HTTP (runserver, DEBUG off, the Celery worker on the embedded
broker), posts the run form as the browser does (the default test split, the chosen models, batch size
64), and times the POST (the run and its batches are created, the first window of batch messages is
written to the broker; no prediction is made in the request); `--starts N` times N starts (each run but
the last is cancelled). Then it polls the JSON the run page polls (`/runs/<id>/progress.json`)
every `--poll` seconds until the run is completed and scored, and prints every value it saw: the
intermediate ones are what the page's progress bar shows while the worker runs the batches.
"""
from __future__ import annotations

import argparse
import re
import time

import httpx


def csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--user", default="demo-curator")
    ap.add_argument("--password", default="medr2-demo-pass")
    ap.add_argument("--models", default="tiny-vlm,random-baseline,prior-baseline")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--poll", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--starts", type=int, default=1,
                    help="start this many runs (each timed); the progress of the last is followed, the others are "
                         "cancelled at once")
    args = ap.parse_args()

    with httpx.Client(base_url=args.url, follow_redirects=False, timeout=60) as c:
        page = c.get("/login/")
        r = c.post("/login/", data={"username": args.user, "password": args.password,
                                             "csrfmiddlewaretoken": csrf(page.text)},
                   headers={"Referer": f"{args.url}/login/"})
        assert r.status_code == 302, f"login failed ({r.status_code})"
        form = c.get("/runs/new/").text
        models = {m["name"]: m["id"] for m in c.get("/api/models/").json()["results"]}
        ids = {name: models[name] for name in args.models.split(",")}
        data = {"csrfmiddlewaretoken": csrf(form), "name": f"bench {time.strftime('%H:%M:%S')}",
                "endpoints": list(ids.values()), "split": "test", "batch_size": str(args.batch_size)}
        times, run_id = [], None
        for _ in range(args.starts):
            if run_id is not None:   # only the last run is followed: cancel the one before (the run page's button)
                c.post(f"/api/runs/{run_id}/cancel/", headers={"X-CSRFToken": c.cookies.get("medr2_csrftoken"),
                                                                "Referer": f"{args.url}/runs/{run_id}/"})
            t0 = time.perf_counter()
            r = c.post("/runs/new/", data=data, headers={"Referer": f"{args.url}/runs/new/"})
            times.append(time.perf_counter() - t0)
            assert r.status_code == 302, f"the run form answered {r.status_code}"
            run_url = r.headers["location"]
            run_id = int(re.search(r"/runs/(\d+)/", run_url).group(1))
            print(f"POST /runs/new/ -> {r.status_code} {run_url} in {1000 * times[-1]:.0f} ms")
        took = sorted(times)[len(times) // 2]

        t0 = time.perf_counter()
        seen = []
        while time.perf_counter() - t0 < args.timeout:
            p = c.get(f"/runs/{run_id}/progress.json").json()
            elapsed = time.perf_counter() - t0
            seen.append((elapsed, p))
            print(f"  {elapsed:6.1f} s  {p['status']:<9} {p['done']:>6} / {p['total']} ({p['percent']}%)"
                  f"  batches {p['batches_done']}/{p['batches_total']}  rate {p['rate_per_s']}/s"
                  f"  eta {p['eta_seconds']}"
                  f"  scored {p['scored']}")
            if p["status"] != "running" and p["scored"]:
                break
            time.sleep(args.poll)
        part_way = [p for _, p in seen if p["status"] == "running" and 0 < p["done"] < p["total"]]
        print(f"start request {1000 * took:.0f} ms (median of {len(times)}); {len(seen)} polls, "
              f"{len(part_way)} part-way "
              f"({len({p['done'] for p in part_way})} distinct counts); finished {seen[-1][1]['status']} "
              f"after {seen[-1][0]:.1f} s")


if __name__ == "__main__":
    main()
