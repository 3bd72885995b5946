"""dlib's k-means (pick_initial_centers, find_clusters_using_kmeans) against hand-worked cases
and a plain-loop reference; imglab's color_mapper against dlib's HSI->RGB by hand."""

import numpy as np
import pytest

from dnnpy.data import find_clusters_using_kmeans, pick_initial_centers
from dnnpy.image import color_mapper


def test_pick_initial_centers_by_hand():
    x = np.array([[0.0, 0], [1, 0], [10, 0], [11, 0], [5, 5]])
    # percentile 0: the farthest sample each time; first centre is sample 0
    c = pick_initial_centers(3, x, percentile=0.0)
    # distances to (0,0): 0 1 100 121 50 -> (11,0); then min dist: 0 1 1 0 50 -> (5,5)
    assert c.tolist() == [[0, 0], [11, 0], [5, 5]]
    # dlib's default percentile 0.01 with 5 samples: rank int(5 - 0.05 - 1) = 3, the 2nd farthest
    assert pick_initial_centers(2, x).tolist() == [[0, 0], [10, 0]]
    with pytest.raises(ValueError, match="num_centers must be an integer > 1"):
        pick_initial_centers(1, x)
    with pytest.raises(ValueError, match="percentile"):
        pick_initial_centers(2, x, percentile=1.0)
    with pytest.raises(ValueError, match="at least 2 samples"):
        pick_initial_centers(2, x[:1])


def _loop_kmeans(x, c, max_iter=1000):
    c = [list(v) for v in c]
    assign = [None] * len(x)
    for _ in range(max_iter):
        changed = False
        for i, s in enumerate(x):
            d = [float(np.sqrt(sum((a - b) ** 2 for a, b in zip(cc, s)))) for cc in c]
            j = d.index(min(d))
            changed |= assign[i] != j
            assign[i] = j
        new = [[0.0] * len(x[0]) for _ in c]
        counts = [0] * len(c)
        for i, s in enumerate(x):
            counts[assign[i]] += 1
            new[assign[i]] = [a + b for a, b in zip(new[assign[i]], s)]
        c = [[v / counts[j] for v in new[j]] if counts[j] else [0.0] * len(x[0]) for j in range(len(c))]
        if not changed:
            break
    return np.array(c)


def test_find_clusters_using_kmeans_matches_a_loop_reference():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(m, 1.0, (30, 2)) for m in ((0, 0), (6, 6), (0, 9))])
    start = pick_initial_centers(3, x)
    got = find_clusters_using_kmeans(x, start)
    np.testing.assert_allclose(got, _loop_kmeans(x.tolist(), start.tolist()), rtol=1e-12)
    # each true cluster's mean is found (the clusters are well separated)
    for m in ((0, 0), (6, 6), (0, 9)):
        assert np.min(np.linalg.norm(got - np.array(m), axis=1)) < 0.6
    # dlib's quirk: a centre with no samples becomes zero
    assert find_clusters_using_kmeans([[1.0], [2.0]], [[1.5], [100.0]]).tolist() == [[1.5], [0.0]]
    with pytest.raises(ValueError, match=r"centers must be a non-empty \(k, 2\)"):
        find_clusters_using_kmeans(x, [[1.0, 2.0, 3.0]])


def test_color_mapper_is_imglabs():
    m = color_mapper()
    # label 0: hue 0 -> HSL(0, 1, 150/255) -> (255, 45, 45) by dlib's HSL2RGB and +0.5 cast;
    # label 1: hue bit_reverse(1) = 128 -> 180.7 degrees -> (45, 253, 255)
    assert m("car") == (255, 45, 45)
    assert m("smiley") == (45, 253, 255)
    assert m("car") == (255, 45, 45) and len(m) == 2 and m.labels() == ["car", "smiley"]
    colors = [m(str(i)) for i in range(30)]
    assert len(set(colors)) == 30 and all(0 <= v <= 255 for c in colors for v in c)
