"""dnnpy.image.draw: dlib's draw_line / draw_rectangle semantics (from dlib/image_transforms/
draw.h, with hand-computed pixels), tile_images and jet against dlib-bin (skipped without it)."""

import numpy as np
import pytest

from dnnpy.geometry import drectangle, rectangle
from dnnpy.image import (colormap_jet, draw_line, draw_rectangle, jet, join_cols, join_rows,
                         overlay, tile_image_grid, tile_images)


def test_axis_lines_are_clipped_and_inclusive():
    img = np.zeros((5, 6, 3), np.uint8)
    draw_line(img, (4, 1), (-3, 1), (1, 2, 3))          # reversed, runs off the left edge
    assert np.all(img[1, :5] == (1, 2, 3)) and np.all(img[1, 5] == 0)
    draw_line(img, (5, 9), (5, 3), 7)                   # gray on RGB, off the bottom
    assert np.all(img[3:, 5] == 7) and np.all(img[:3, 5] == 0)
    draw_line(img, (9, 0), (9, 4), 9)                   # fully outside: nothing
    assert img.sum() == 5 * 6 + 2 * 7 * 3
    g = np.zeros((3, 3), np.uint8)
    draw_line(g, (0, 0), (2, 0), (30, 60, 90))          # RGB on gray: (r + g + b) // 3
    assert list(g[0]) == [60, 60, 60]


def test_diagonal_line_is_antialiased_like_dlib():
    img = np.zeros((4, 5), np.uint8)
    draw_line(img, (0, 0), (4, 2), 200)  # slope 1/2: x steps, y = x/2
    # x=0: y 0 alpha 255; x=1: y=0.5 -> rows 0 and 1 get alpha trunc(0.5*255)=127 each
    # gray blend onto 0: trunc(200 * a / 255)
    exp = np.zeros((4, 5), np.int64)
    for x in range(5):
        d = x / 2
        y = int(d)
        for yy, a in ((y, int((1 - (d - y)) * 255)), (y + 1, int((d - y) * 255))):
            if a == 255:
                exp[yy, x] = 200
            elif yy < 4:
                exp[yy, x] = 200 * a // 255
    np.testing.assert_array_equal(img, exp)
    rgb = np.full((4, 5, 3), 100, np.uint8)
    draw_line(rgb, (0, 0), (4, 2), (255, 0, 0))  # RGB blend: d + ((c - d) * a >> 8)
    assert tuple(rgb[0, 1]) == (100 + (155 * 127 >> 8), 100 + (-100 * 127 >> 8), 100 + (-100 * 127 >> 8))
    steep = np.zeros((5, 4), np.uint8)
    draw_line(steep, (0, 0), (2, 4), 200)  # the same line with the axes swapped
    np.testing.assert_array_equal(steep, exp.T)


def test_draw_rectangle_thickness_and_types():
    img = np.zeros((10, 10), np.uint8)
    draw_rectangle(img, rectangle(2, 3, 6, 7), 255)
    edge = np.zeros((10, 10), bool)
    edge[3, 2:7] = edge[7, 2:7] = edge[3:8, 2] = edge[3:8, 6] = True
    np.testing.assert_array_equal(img > 0, edge)
    img2 = np.zeros((10, 10), np.uint8)
    draw_rectangle(img2, (2, 3, 6, 7), 255, thickness=3)  # pass 0: rect, 1: grown 1, 2: shrunk 1
    assert img2[2, 1] == 255 and img2[4, 3] == 255 and img2[3, 2] == 255 and img2[5, 4] == 0
    img3 = np.zeros((10, 10), np.uint8)
    draw_rectangle(img3, drectangle(2.2, 2.8, 6.0, 7.1), 255)  # rounded to (2, 3, 6, 7)
    np.testing.assert_array_equal(img3, img)
    draw_rectangle(img3, rectangle(-5, -5, 30, 30), 9)  # all outside: nothing, no error
    np.testing.assert_array_equal(img3, img)
    with pytest.raises(ValueError, match=r"draw_rectangle.*uint8"):
        draw_rectangle(np.zeros((3, 3), np.float32), rectangle(0, 0, 1, 1), 1)
    with pytest.raises(ValueError, match="colour values"):
        draw_line(img, (0, 0), (1, 0), (300, 0, 0))
    with pytest.raises(ValueError, match="thickness"):
        draw_rectangle(img, rectangle(0, 0, 1, 1), 1, thickness=0)


def test_tile_images_layout():
    a = np.full((2, 3, 3), 10, np.uint8)
    b = np.full((3, 2, 3), 20, np.uint8)
    t = tile_images([a, b, a])  # 3 images: 2 columns, 2 rows, cells 3 x 3
    assert t.shape == (6, 6, 3)
    assert np.all(t[:2, :3] == 10) and np.all(t[2, :3] == 0) and np.all(t[:3, 3:5] == 20)
    assert np.all(t[3:5, :3] == 10) and np.all(t[3:, 3:] == 0)
    for n, (rows, cols) in {1: (1, 1), 2: (1, 2), 4: (2, 2), 5: (2, 3), 7: (3, 3), 10: (3, 4)}.items():
        assert tile_images([np.ones((1, 1), np.uint8)] * n).shape == (rows, cols)
    assert tile_images([]).shape == (0, 0)
    with pytest.raises(ValueError, match="image 1"):
        tile_images([a, np.zeros((2, 2), np.uint8)])


def test_tile_images_matches_dlib():
    dlib = pytest.importorskip("dlib")
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 256, (rng.integers(2, 6), rng.integers(2, 6), 3)).astype(np.uint8)
            for _ in range(7)]
    np.testing.assert_array_equal(tile_images(imgs), dlib.tile_images(imgs))
    gray = [im[:, :, 0].copy() for im in imgs[:5]]
    np.testing.assert_array_equal(tile_images(gray), dlib.tile_images(gray))


def test_tile_image_grid():
    a = np.full((2, 3, 3), 10, np.uint8)
    b = np.full((2, 3, 3), 20, np.uint8)
    grid = tile_image_grid([[a, b], [b]], pad=1, background=0)
    assert grid.shape == (1 + 2 * 3, 1 + 2 * 4, 3)
    assert np.all(grid[1:3, 1:4] == 10) and np.all(grid[1:3, 5:8] == 20)
    assert np.all(grid[4:6, 1:4] == 20) and np.all(grid[4:6, 5:8] == 0)
    assert np.all(grid[0] == 0)
    with pytest.raises(ValueError, match=r"image \[0\]\[1\]"):
        tile_image_grid([[a, np.zeros((2, 2, 3), np.uint8)]])


def test_join_rows_cols():
    a, b = np.zeros((2, 3, 3), np.uint8), np.ones((2, 4, 3), np.uint8)
    assert join_rows(a, b).shape == (2, 7, 3)
    assert join_cols(a, a).shape == (4, 3, 3)
    with pytest.raises(ValueError, match=r"join_cols.*\(2, 3, 3\) and \(2, 4, 3\)"):
        join_cols(a, b)
    with pytest.raises(ValueError, match="join_rows"):
        join_rows(a, np.zeros((3, 3, 3), np.uint8))


def test_colormap_jet_table():
    # g = 8 * v for v in [0, 1]: the five pieces of dlib's table, and the clamping
    v = np.array([0, 1 / 8, 2 / 8, 4 / 8, 6 / 8, 1, -1, 2])
    np.testing.assert_array_equal(colormap_jet(v, 0, 1), [
        [0, 0, 128], [0, 0, 255], [0, 128, 255], [128, 255, 128], [255, 128, 0], [128, 0, 0],
        [0, 0, 128], [128, 0, 0]])
    assert colormap_jet(0.5, 0, 1).tolist() == [128, 255, 128]
    assert jet(np.full((2, 2), 5.0)).tolist() == [[[0, 0, 0]] * 2] * 2  # max == min: black


def test_jet_matches_dlib():
    dlib = pytest.importorskip("dlib")
    rng = np.random.default_rng(1)
    for a in (rng.normal(size=(7, 9)).astype(np.float32), rng.integers(0, 256, (5, 6)).astype(np.uint8),
              np.linspace(-3, 4, 60).reshape(6, 10)):
        np.testing.assert_array_equal(jet(a), dlib.jet(a))
    custom = jet(np.array([[0.0, -2.5, -1.25]]), 0, -2.5)  # find_cars' call
    assert custom.tolist() == [[[128, 0, 0], [0, 0, 128], [128, 255, 128]]]


def test_overlay():
    img = np.full((3, 3, 3), 100, np.uint8)
    mask = np.zeros((3, 3), bool)
    mask[1, 1] = True
    overlay(img, mask, (255, 0, 0), alpha=0.5)
    a = 128  # round(0.5 * 255)
    assert tuple(img[1, 1]) == (100 + (155 * a >> 8), 100 + (-100 * a >> 8), 100 + (-100 * a >> 8))
    assert np.all(img[0] == 100)
    overlay(img, mask, (1, 2, 3), alpha=1.0)
    assert tuple(img[1, 1]) == (1, 2, 3)
    with pytest.raises(ValueError, match="mask shape"):
        overlay(img, np.zeros((2, 3), bool), 1)
