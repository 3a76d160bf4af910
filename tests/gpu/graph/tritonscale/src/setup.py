from setuptools import setup
setup(name="tritonscale", version="0.1.0", packages=["tritonscale"])
