"""What a failed record's side output holds (see ``DataStream.with_failed_records``)."""

from sparktide.runtime.failed_records import FailedRecord

__all__ = ["FailedRecord"]
