"""NIC settings on every node and the doctor that flags the costly ones."""
