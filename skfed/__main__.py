"""``python -m skfed``: the quick tour."""

from skfed._tour import main

if __name__ == "__main__":
    main()
