#!/usr/bin/env python3
"""A TCP proxy on loopback that delays every chunk it forwards, for the network tests.

delay_proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT DELAY_MS
Prints the port it listens on (LISTEN_PORT 0 picks one) and runs until killed.
"""
import asyncio
import sys


async def pipe(reader, writer, delay):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    listen_port = int(sys.argv[1])
    host, port = sys.argv[2].rsplit(":", 1)
    delay = int(sys.argv[3]) / 1000.0

    async def handle(cr, cw):
        try:
            sr, sw = await asyncio.open_connection(host, int(port))
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, sw, delay), pipe(sr, cw, delay))

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
