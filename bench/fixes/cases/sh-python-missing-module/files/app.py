import tomli_w

print(tomli_w.dumps({'name': 'demo'}))
