def summary(name, count):
    return name + ": " + count + " items"
