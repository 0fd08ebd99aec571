"""The suite's copies of built data dirs: the embedded store preallocates 32 MiB files that hold
a few KiB, so a copy that wrote every zero took 528 MB a copy and filled CI's disk."""

from __future__ import annotations

import os
from pathlib import Path

from agent.knowledge.search import search
from tests.knowledge_fixtures import copied, open_runtime


def _allocated(root: Path) -> tuple[int, int]:
    """(bytes on disk, bytes as listed) of every file under root."""
    on_disk = listed = 0
    for path in root.rglob("*"):
        if path.is_file():
            stat = path.stat()
            on_disk += stat.st_blocks * 512
            listed += stat.st_size
    return on_disk, listed


async def test_a_copied_data_dir_takes_the_space_of_its_original_and_answers_the_same(city_permits_ingested, tmp_path):
    source_disk, source_listed = _allocated(city_permits_ingested.data_dir)
    settings = copied(city_permits_ingested, tmp_path / "data")
    copy_disk, copy_listed = _allocated(settings.data_dir)
    assert copy_listed == source_listed
    assert source_listed > 4 * source_disk, "the store no longer preallocates: this test guards nothing"
    assert copy_disk <= source_disk + 4 * 1024 * 1024
    for name in os.listdir(city_permits_ingested.data_dir):
        assert (settings.data_dir / name).exists()

    question = "How much does a permit to remove a large tree cost?"
    async with open_runtime(settings) as rt:
        passages = await search(rt, question, top_k=5)
    assert passages and any(p.source == "tree-removal.md" for p in passages)


def test_a_copy_keeps_every_byte_with_holes_or_on_a_file_system_that_cannot_tell_them(tmp_path, monkeypatch):
    import errno

    from tests import knowledge_fixtures

    source = tmp_path / "src"
    source.mkdir()
    with open(source / "page.dat", "wb") as handle:  # data, a 4 MiB hole, data, a hole at the end
        handle.write(b"head" * 1000)
        handle.seek(4 << 20)
        handle.write(b"tail" * 1000)
        handle.truncate(8 << 20)
    expected = (source / "page.dat").read_bytes()
    assert knowledge_fixtures.copy_data_dir(source, tmp_path / "sparse").joinpath("page.dat").read_bytes() == expected

    def cannot(fd, offset, whence):
        raise OSError(errno.EINVAL, "SEEK_DATA not supported")

    monkeypatch.setattr(knowledge_fixtures.os, "lseek", cannot)
    assert knowledge_fixtures.copy_data_dir(source, tmp_path / "plain").joinpath("page.dat").read_bytes() == expected
