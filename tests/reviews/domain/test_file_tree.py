"""The viewed mark's key and the file tree (reviews/domain/file_tree.py): plain values."""

from __future__ import annotations

from reviews.domain.file_tree import FileFacts, file_tree, file_view_key, preview_anchor

HUNK = "@@ -10,3 +10,3 @@ def total(order):\n     x = 1\n-    return x\n+    return x + 1\n"


def test_the_same_content_gives_the_same_key():
    assert file_view_key("shop/cart.py", [HUNK]) == file_view_key("shop/cart.py", [HUNK])


def test_the_same_edit_further_down_the_file_keeps_its_key():
    # A rebase that only moved the change: the hunk header's numbers differ, nothing else.
    moved = HUNK.replace("@@ -10,3 +10,3 @@", "@@ -42,3 +44,3 @@")
    assert file_view_key("shop/cart.py", [moved]) == file_view_key("shop/cart.py", [HUNK])


def test_a_changed_diff_gives_a_new_key():
    edited = HUNK.replace("x + 1", "x + 2")
    assert file_view_key("shop/cart.py", [edited]) != file_view_key("shop/cart.py", [HUNK])
    # One more hunk in the same file is a change too.
    extra = "@@ -1,1 +1,2 @@\n import os\n+import sys\n"
    assert file_view_key("shop/cart.py", [extra, HUNK]) != file_view_key("shop/cart.py", [HUNK])


def test_the_path_is_part_of_the_key():
    assert file_view_key("shop/cart.py", [HUNK]) != file_view_key("shop/order.py", [HUNK])


def test_a_file_without_hunks_is_keyed_by_its_blob():
    first = file_view_key("logo.png", [], blob="89abcde")
    assert first == file_view_key("logo.png", [], blob="89abcde")
    assert first != file_view_key("logo.png", [], blob="1234567")


def test_the_tree_groups_by_directory_and_counts_viewed_files():
    def facts(path, change, added, deleted, hunk):
        return FileFacts(path, change, added, deleted, file_view_key(path, [hunk]))

    files = [
        facts("shop/cart.py", "modified", 3, 1, HUNK),
        facts("README.md", "modified", 1, 0, "@@ -1 +1 @@\n-a\n+b\n"),
        facts("shop/api/views.py", "added", 10, 0, "@@ -0,0 +1 @@\n+x\n"),
        facts("shop/base.py", "deleted", 0, 4, "@@ -1 +0,0 @@\n-y\n"),
    ]
    viewed = {file_view_key("shop/cart.py", [HUNK])}
    tree = file_tree(
        files,
        findings_per_path={"shop/cart.py": 2},
        viewed_keys=viewed,
        anchors={"shop/cart.py": preview_anchor("k" * 64, "shop/cart.py")},
    )
    assert [d.directory for d in tree.directories] == ["", "shop", "shop/api"]
    shop = tree.directories[1]
    assert [f.name for f in shop.files] == ["base.py", "cart.py"]
    cart = shop.files[1]
    assert (cart.additions, cart.deletions, cart.findings, cart.viewed) == (3, 1, 2, True)
    assert cart.anchor == preview_anchor("k" * 64, "shop/cart.py")
    assert shop.files[0].anchor is None and shop.files[0].findings == 0
    assert (tree.viewed, tree.total) == (1, 4)
