import tensorflow as tf

from keras_gauss.pipelines import tokenize


def tokens(text, **kwargs):
    return [t.decode() for t in tokenize(tf.constant(text), **kwargs).numpy()]


def test_lowercases_and_strips_punctuation():
    assert tokens("Hello, World! (It's) 3.14") == ["hello", "world", "it's", "3", "14"]


def test_keeps_intra_word_apostrophes_and_hyphens_only():
    text = "Don't 'quote' state-of-the-art -- rock 'n' roll o’clock -x- a--b"
    assert tokens(text) == ["don't", "quote", "state-of-the-art", "rock", "n", "roll", "o’clock", "x", "a", "b"]


def test_unicode_letters_are_lowercased_and_kept():
    assert tokens("ÉTÉ Naïve") == ["été", "naïve"]


def test_options_off_split_on_whitespace_only():
    assert tokens("Hello,  World!\tX", lowercase=False, strip_punctuation=False) == ["Hello,", "World!", "X"]
    assert tokens("Hello, World!", strip_punctuation=False) == ["hello,", "world!"]
    assert tokens("Hello, World!", lowercase=False) == ["Hello", "World"]


def test_batched_inside_tf_data():
    ds = tf.data.Dataset.from_tensor_slices(["A b.", "", "c-d!"]).batch(3).map(tokenize)
    assert next(iter(ds)).to_list() == [[b"a", b"b"], [], [b"c-d"]]
