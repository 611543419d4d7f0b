export function lineTotal(price: number, quantity: number): number {
  return price * quantity;
}

export function fromForm(fields: { price: string; quantity: string }): number {
  return lineTotal(Number(fields.price), fields.quantity);
}
