import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# the suite generates its code afresh: the disk cache has its own tests (test_disk_cache.py)
os.environ["S2SAD_CACHE"] = "0"
