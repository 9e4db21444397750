"""A receipt read where a file stands in the way of the receipts' folder says what to fix.

`ReceiptStore.read_as_written` (and `read`) met `memory/reviews`, or `memory`, made a file as a
raw NotADirectoryError, where a listing of the receipts says it as `HomeUnusable` naming the
folder. No command shows it: through the daemon, or in the CLI's process (`--no-daemon`), the
marks' listing every request begins with refuses first; the CLI's own read of a review's receipt
(when the daemon is gone after answering) takes any OSError as a receipt it cannot read now, and
the language server only lists the receipts. So the store is asked as a caller of it outside a
request asks it.
"""

from __future__ import annotations

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home, HomeUnusable

REVIEW = "ab" * 32


@pytest.mark.parametrize("where", ["memory/reviews", "memory"])
def test_a_file_where_the_receipts_folder_goes_is_said_as_a_listing_says_it(home: Home, where: str) -> None:
    stands = home.root / where
    stands.parent.mkdir(parents=True, exist_ok=True)
    stands.write_text("not a folder\n")
    store = ReceiptStore(home)
    with pytest.raises(HomeUnusable) as listed:
        store.all()
    for read in (store.read_as_written, store.read):
        with pytest.raises(HomeUnusable) as refused:
            read(REVIEW)
        assert f"{stands} cannot be made a folder (File exists); move what is in the way" in str(
            refused.value
        )
        assert str(refused.value) == str(listed.value)
