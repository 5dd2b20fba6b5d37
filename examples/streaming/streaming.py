"""Streaming MapReduce with actors (FEATURES EX-019): mapper actors read a stream of
articles and count words; reducer actors each own a range of first letters, pull
their range from every mapper (actor handles passed to actors) and print the top
words per article index.

The documents read Wikipedia; this version generates articles locally (a seeded
Zipf-like vocabulary), so it needs no network.

    python examples/streaming/streaming.py                     # full size
    python examples/streaming/streaming.py --num-articles=3    # smoke
"""

from __future__ import annotations

import argparse
import collections
import string

import numpy as np

import ray

COMMON = ["the", "of", "and", "in", "to", "a", "is", "as", "by", "for", "was", "on", "with", "that"]


def generate_article(seed: int, length: int = 5000) -> str:
    """An article of ``length`` words: common words with Zipf weights plus random words."""
    rng = np.random.default_rng(seed)
    letters = list(string.ascii_lowercase)
    rare = ["".join(rng.choice(letters, size=rng.integers(3, 9))) for _ in range(500)]
    vocabulary = COMMON + rare
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    words = rng.choice(vocabulary, size=length, p=weights / weights.sum())
    return " ".join(words)


class Stream:
    """The articles one mapper reads, in order (stands in for a stream of titles)."""

    def __init__(self, seeds, words_per_article: int):
        self.seeds = list(seeds)
        self.words_per_article = words_per_article

    def __len__(self):
        return len(self.seeds)

    def read(self, index: int) -> str:
        return generate_article(self.seeds[index], self.words_per_article)


@ray.remote
class Mapper:
    def __init__(self, title_stream: Stream):
        self.stream = title_stream
        self.num_articles_processed = 0
        self.word_counts: list[collections.Counter] = []

    def _read_up_to(self, article_index: int):
        while self.num_articles_processed <= article_index:
            words = self.stream.read(self.num_articles_processed).split()
            self.word_counts.append(collections.Counter(words))
            self.num_articles_processed += 1

    def get_range(self, article_index: int, keys: tuple[str, str]):
        """Counts of the words whose first letter is in [keys[0], keys[1]] in article
        ``article_index`` of this mapper's stream."""
        self._read_up_to(article_index)
        counts = self.word_counts[article_index]
        return [(w, c) for w, c in counts.items() if keys[0] <= w[0] <= keys[1]]


@ray.remote
class Reducer:
    def __init__(self, keys, *mappers):
        self.mappers = mappers
        self.keys = keys

    def next_reduce_result(self, article_index: int):
        word_count_sum = collections.Counter()
        counts = ray.get([m.get_range.remote(article_index, self.keys) for m in self.mappers])
        for mapper_counts in counts:
            for word, count in mapper_counts:
                word_count_sum[word] += count
        return word_count_sum


def run(num_mappers: int = 3, num_reducers: int = 4, num_articles: int = 10,
        words_per_article: int = 5000, top: int = 10):
    streams = [
        Stream(range(m * 1000, m * 1000 + num_articles), words_per_article) for m in range(num_mappers)
    ]
    # Partition the first letters among the reducers.
    chunks = np.array_split(np.array(list(string.ascii_lowercase)), num_reducers)
    keys = [(str(chunk[0]), str(chunk[-1])) for chunk in chunks]
    mappers = [Mapper.remote(stream) for stream in streams]
    reducers = [Reducer.remote(key, *mappers) for key in keys]
    tops = []
    for article_index in range(num_articles):
        print("article index =", article_index)
        counts = collections.Counter()
        for partial in ray.get([r.next_reduce_result.remote(article_index) for r in reducers]):
            counts.update(partial)
        tops.append(counts.most_common(top))
        for word, count in tops[-1]:
            print(word, count)
    for actor in mappers + reducers:
        ray.kill(actor)
    return tops


def main(argv=None):
    parser = argparse.ArgumentParser(description="Streaming word count with mapper/reducer actors.")
    parser.add_argument("--num-mappers", default=3, type=int)
    parser.add_argument("--num-reducers", default=4, type=int)
    parser.add_argument("--num-articles", default=100, type=int)
    parser.add_argument("--words-per-article", default=5000, type=int)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    return run(args.num_mappers, args.num_reducers, args.num_articles, args.words_per_article)


if __name__ == "__main__":
    main()
