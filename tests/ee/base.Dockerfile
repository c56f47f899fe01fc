# The execution environment's base image, derived from the test bed's Debian systemd image
# (tests/testbed/testbed.sh image): python3 is there; pip comes from a wheel in the build
# context (Debian's python3 has no ensurepip), and a package-manager shim lets
# ansible-builder's dnf-minded scripts run (tests/ee/ee-pkgmgr).
ARG TESTBED_IMAGE
FROM ${TESTBED_IMAGE}
# The build machine's CA bundle: pip in later stages trusts what the machine's pip trusts.
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY wheels/ /tmp/ee-wheels/
COPY ee-pkgmgr /usr/local/bin/ee-pkgmgr
# Debian marks its Python externally managed (PEP 668); this image is a single-purpose EE.
ENV PIP_BREAK_SYSTEM_PACKAGES=1
RUN whl=$(ls /tmp/ee-wheels/pip-*.whl) && python3 "$whl/pip" install --no-index --no-cache-dir "$whl" \
    && rm -rf /tmp/ee-wheels && chmod 0755 /usr/local/bin/ee-pkgmgr && python3 -m pip --version
CMD ["bash"]
