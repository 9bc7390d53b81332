"""Beside the pipeline: does a metric agree with people? (Section 6.3, Table 8, Figure 6)."""
