"""asyncio and streaming: concurrent acomplete without blocking the loop, streams sync and
async, failover before the first piece, and cancellation of an awaiting task."""

import asyncio

import pytest

from switchyard import AllProvidersFailed, Gateway


def test_concurrent_acomplete_does_not_block_the_loop(mock, vendors):
    mock.default["openai"] = 0.3
    gateway = Gateway([vendors.openai()])

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick = asyncio.create_task(ticker())
        replies = await asyncio.gather(*(gateway.acomplete(f"hello {i}") for i in range(20)))
        tick.cancel()
        return replies, ticks

    replies, ticks = asyncio.run(main())
    assert [r.text for r in replies] == [mock.text] * 20
    # the calls overlapped at the upstream (one after another, it would hold one at a time)
    assert mock.most_in_flight["openai"] >= 4
    assert ticks >= 10  # the loop kept running meanwhile


def test_async_failover_and_errors(mock, vendors):
    mock.default["anthropic"] = 529
    gateway = Gateway([vendors.anthropic(max_attempts=1), vendors.openai()])
    reply = asyncio.run(gateway.acomplete("hello"))
    assert reply.provider == "openai" and reply.failed_over
    mock.default["openai"] = 503
    with pytest.raises(AllProvidersFailed):
        asyncio.run(gateway.acomplete("hello"))


def test_cancelling_the_task_cancels_the_request(mock, vendors):
    mock.default["openai"] = 5.0
    gateway = Gateway([vendors.openai()], budget_usd=1.0)

    async def main():
        task = asyncio.create_task(gateway.acomplete("hello", max_tokens=10))
        await asyncio.sleep(0.2)
        assert gateway._core.budget()[2] > 0  # reserved while in flight
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(300):
            if gateway._core.budget()[2] == 0 and mock.abandoned["openai"] == 1:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert gateway._core.budget()[2] == 0  # the reservation was released
    assert mock.abandoned["openai"] == 1  # the upstream call was dropped, not waited out
    assert gateway.ledger.remaining_usd == pytest.approx(1.0)


def test_stream_yields_pieces_then_the_whole_reply(mock, vendors):
    gateway = Gateway([vendors.openai()])
    stream = gateway.stream("hello")
    pieces = list(stream)
    assert len(pieces) > 3 and "".join(pieces) == mock.text
    assert stream.provider == "openai"
    assert stream.reply.text == mock.text
    assert (stream.reply.usage.input_tokens, stream.reply.usage.output_tokens) == (1412, 96)
    assert stream.reply.usage.cost_usd is not None


def test_stream_fails_over_before_the_first_piece(mock, vendors):
    mock.default["anthropic"] = 529
    gateway = Gateway([vendors.anthropic(max_attempts=1), vendors.openai()])
    stream = gateway.stream("hello")
    assert "".join(stream) == mock.text
    assert stream.reply.failed_over and stream.reply.attempts[0].error_type == "ProviderUnavailable"


def test_stream_error_is_raised(mock, vendors):
    mock.default["openai"] = 500
    gateway = Gateway([vendors.openai(max_attempts=1)])
    with pytest.raises(AllProvidersFailed):
        list(gateway.stream("hello"))


def test_astream(mock, vendors):
    gateway = Gateway([vendors.openai()])

    async def main():
        stream = gateway.astream("hello")
        pieces = [p async for p in stream]
        return pieces, stream.reply

    pieces, reply = asyncio.run(main())
    assert "".join(pieces) == mock.text and reply.provider == "openai"


def test_cancelling_an_astream_cancels_the_call(mock, vendors):
    mock.default["openai"] = 5.0  # the stream never opens in time
    gateway = Gateway([vendors.openai()], budget_usd=1.0)

    async def main():
        async def consume():
            return [p async for p in gateway.astream("hello", max_tokens=10)]

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(200):
            if gateway._core.budget()[2] == 0:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert gateway._core.budget()[2] == 0
