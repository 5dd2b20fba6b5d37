"""The streaming MapReduce counts exactly what a serial count finds."""

import collections
import importlib.util
import os

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("streaming_example", os.path.join(HERE, "streaming.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def test_streaming_top_words_match_a_serial_count(ray_cluster):
    streaming = _load()
    tops = streaming.main(["--num-mappers=2", "--num-reducers=3", "--num-articles=3", "--words-per-article=2000"])
    assert len(tops) == 3
    for index, top in enumerate(tops):
        serial = collections.Counter()
        for mapper in range(2):
            serial.update(streaming.generate_article(mapper * 1000 + index, 2000).split())
        assert dict(top) == dict(serial.most_common(10))
    assert tops[0][0][0] == "the"
