"""The news reader serves its API over real HTTP; the actor fetches a locally served
feed over HTTP, stores it in sqlite and records stars."""

import importlib.util
import os
import sqlite3
import threading

import pytest
import requests

import ray

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("newsreader_server", os.path.join(HERE, "server.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from werkzeug.serving import make_server

    server_module = _load()
    db = str(tmp_path_factory.mktemp("newsreader") / "newsreader.db")
    ray.init(num_cpus=1)
    news_server = server_module.NewsServer.remote(db)
    http = make_server("127.0.0.1", 0, server_module.create_app(news_server), threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}", db
    http.shutdown()
    thread.join()
    ray.kill(news_server)
    ray.shutdown()


def _api(base, method_name, *method_args):
    return requests.post(f"{base}/api", json={"method_name": method_name, "method_args": list(method_args)}, timeout=60)


def test_add_channel_fetches_stores_and_stars_items(served):
    base, db = served
    feed_url = f"{base}/feeds/local.rss"
    reply = _api(base, "retrieve_feed", feed_url)
    assert reply.status_code == 200
    feed = reply.json()
    assert feed["channel"]["title"] == "Local news: local"
    assert [i["title"] for i in feed["items"]][:2] == ["local story 0", "local story 1"]
    assert _api(base, "get_channels").json() == [feed_url]
    assert _api(base, "like_item", feed["items"][3]["link"], True).json() is True
    assert _api(base, "starred").json() == [{"title": "local story 3", "link": feed["items"][3]["link"]}]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*), SUM(liked) FROM news").fetchone() == (10, 1)


def test_unknown_method_and_bad_feed_are_clear_errors(served):
    base, _ = served
    reply = _api(base, "drop_tables")
    assert reply.status_code == 400 and "drop_tables" in reply.json()["error"]
    reply = _api(base, "retrieve_feed", f"{base}/")  # HTML, not RSS
    assert reply.status_code == 502 and reply.json()["error"]


def test_index_page_is_served(served):
    base, _ = served
    page = requests.get(base, timeout=10)
    assert page.status_code == 200 and "Add channel" in page.text
