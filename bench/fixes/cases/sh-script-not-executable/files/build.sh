#!/usr/bin/env bash
echo built
