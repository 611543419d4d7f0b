def make_multipliers(n):
    """[x*0, x*1, ..., x*(n-1)] as functions of x."""
    return [lambda x: x * i for i in range(n)]
