"""What a run hands the user: reporters, fixes and their application, ``# noqa`` handling."""
