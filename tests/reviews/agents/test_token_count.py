"""The offline token count: o200k's own figures, with no download."""

from reviews.agents.token_count import count_tokens


def test_counts_as_o200k_does():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    # Code tokenizes denser than prose: a line of Python is several tokens, never one per char.
    line = "def total(items):\n    return sum(i.price for i in items)\n"
    assert 8 < count_tokens(line) < len(line)


def test_special_token_text_is_counted_as_text():
    # PR text may contain "<|endoftext|>": it is counted, never refused or treated as special.
    assert count_tokens("a <|endoftext|> b") > 3
